"""Jobs in containers: a runtime, not a new kind of job (issue 28).

The supervisor stays on the host. The job's script ends by exec'ing the runtime's foreground client
(`podman run --rm …` / `docker run --rm …`, command.py), so output capture and parsing stay as they
are, and the stop signal goes to that client, which proxies it into the container. There gpudeck's
own PID 1 (wrapper.py) forwards it to the command and, should the command be a shell that did not
pass it on, to every process left. The container's name is derived from the job (`gpudeck-ID-NODE`)
and journaled (`container` event); after any end the supervisor, an adopter or the agent removes it
(cleanup.py), so nothing of the job is left in the runtime. host.py finds the runtime and whether it
can pass GPUs (CDI specs for podman, the NVIDIA hook for docker).
"""
