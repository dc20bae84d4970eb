"""This series' extensions of lessonkit: the attachments it registers in
``sourcemap/attachments.toml`` (``diagrams``: the call-sequence and nested-traces diagrams;
``readme``: Mini Autograd's README). See docs/dev/engine-guide.md, "Attachments of your own"."""
