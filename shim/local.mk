# shim/: see DESIGN.md
