"""The host's content-addressed code store (agent dir `code/`), filled by `receive`, read by
`prepare files`, pruned by the `code_gc` op.

    code/blobs/<2 hex>/<sha256>      a file's bytes, 0444 (`.x`: the same bytes, 0555, for exec-bit files)
    code/snapshots/<id>.json         a manifest, as the client sent it; id = sha256 of those bytes
    code/placed/<home>.json          what materialize last put in work/<home> (so a later snapshot
                                     removes its own files there, never the job's checkpoints)
    code/lock                        flock: shared while a receive or a materialize runs, exclusive for gc

Blobs are verified (sha256) before their atomic rename into place, and a snapshot's manifest is
written after every blob it names: a snapshot that exists is whole.
"""

SNAPSHOT_VERSION = 1
