"""Attention Lab's Streamlit layer: state, sidebar, cached computation, panel rendering.

app.py is the entry point; these modules hold its parts. Only the UI lives here: the numbers come
from lab/ (which calls model/), the figures from viz/.
"""
