# codegen/: see DESIGN.md
