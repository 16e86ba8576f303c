"""The app's pages (Streamlit multipage navigation, see app.py): each file is one page's body."""
