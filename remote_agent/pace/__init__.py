"""A multi-node job's pace per node (issue 34): recent progress points kept by each node's reader
(points.py), step rates over windows (windows.py), the straggler judgement (straggler.py) and the
likely hang's node (hang.py). Standard library only: the agent keeps the points, any reader judges."""
