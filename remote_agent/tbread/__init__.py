"""TensorBoard in: a job's supervisor reads the event files a run writes under its --tensorboard
LOGDIR and turns their scalars into the job's metric points (stdlib only: a TFRecord reader and a
small protobuf wire-format decoder)."""
