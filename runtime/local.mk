# runtime/: see DESIGN.md
