"""The chart renderer: Go text/template with sprig and Helm's functions (render.py, main.go)."""
