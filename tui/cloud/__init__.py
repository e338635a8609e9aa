"""The user's cloud GPU instances (AWS, Aliyun): listed, priced, judged idle, started, stopped, launched.

No Textual here: the CLI (`gpudeck cloud …`) and a TUI worker call the same functions. Every
provider call is blocking network IO; call it from a worker thread or the CLI, never the UI thread.
"""
