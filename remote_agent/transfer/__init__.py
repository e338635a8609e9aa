"""Files of a job's working directory sent back to the client (`gpudeck-agent send`, `gpudeck pull`).

One stream per pull (tui/remote/agent_stream.py): the client writes its request and the manifest of
what it already holds, the agent answers with what differs, framed (frames.py). Nothing is followed
out of the work dir: every directory is opened relative to its parent with O_NOFOLLOW (workpath.py,
walk.py), so a symlink the job left is sent as a link, never as what it points to.
"""
