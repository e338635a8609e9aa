"""`--data`: objects of an S3-compatible store for a job, listed and presigned on the client (boto3),
fetched by the agent (remote_agent/datafetch). Credentials never leave this machine."""
