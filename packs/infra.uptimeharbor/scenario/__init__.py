"""The scripted end-to-end scenario of design paper §12, one function per step."""
