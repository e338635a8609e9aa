"""Objects of an S3-compatible store brought to the host for a job (`--data`), before its command.

Copy (the default): the client lists the objects and presigns a GET URL for each; the URLs travel
beside the spec (`launch`'s `data_urls`, kept in the node's `data-urls.json` until the fetch is
done), never in it, so no credential and no bearer URL lands in spec.json, the journal or a listing.
The objects go to a content-addressed cache (`<agent dir>/data/objects/`, named by ETag and size),
their tree is made of hard links to it (`data/trees/`, named by the listing), and the job's PATH is
a symlink to that tree, switched atomically. Mount: the host's s3fs or rclone mounts the prefix.
"""

URLS_NAME = "data-urls.json"  # in the node's job dir, 0600, deleted once `prepare files` is over
