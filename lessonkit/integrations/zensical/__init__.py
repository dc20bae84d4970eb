"""The Zensical emitter: ``lessonkit build --engine zensical`` (:mod:`lessonkit.integrations.zensical.emit`)."""
