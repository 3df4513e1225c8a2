"""Benchmarks and training tasks behind one `Task` type."""

from murphy_lab.tasks.task import Task

__all__ = ["Task"]
