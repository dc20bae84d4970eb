"""Pages the build adds to a site: citations and the source browser, generated attachments, the link check."""
