"""Code sync, the client's side: a directory walked as git would (ignore rules), each file hashed
once (a cache keyed by size, mtime and inode), a canonical manifest, and an upload of only the
blobs a host lacks over one agent byte stream (remote_agent/codestore/receive.py)."""
