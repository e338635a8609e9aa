"""Stacks of a hung job (issue 34): every Python process of a job's live tree on this node, its stack
taken by py-spy where the host has it, else by the faulthandler signal the program registered."""
