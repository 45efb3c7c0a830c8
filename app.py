"""Attention Lab (placeholder until the app lands)."""

import streamlit as st

st.set_page_config(page_title="Attention Lab", layout="wide")
st.title("Attention Lab")
