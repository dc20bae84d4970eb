"""Running experiments: jobs and results, the cached runner, outcomes and records."""
