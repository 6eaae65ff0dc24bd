"""The operations on one open index directory, below the facade and above the stages.

`IndexDirectory` (directory) holds the path, manifest, store, lock, generations and the parts opened on first
use; writes (add, delete, refit), check (verify and repair) and describe (info) take it, never the Index; every
write and a repair publish through one step (publish)."""
