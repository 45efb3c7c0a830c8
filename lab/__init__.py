"""The glue between model/ and viz/: a figure spec, the runs it asks for, and the views it draws.

app.py and `python -m lab.export` both go through here, so a figure in the app and one exported
from the same spec are the same figure. No Streamlit here.
"""

from lab.threads import single_blas_thread

single_blas_thread()  # numpy's BLAS threads would fight torch's for the cores (lab/threads.py)
