"""Messages about a job's end sent from its host (`spec.notify`): which end is which event
(events.py) and the one HTTP POST each target takes (send.py)."""
