"""SQL generation: one statement per vertex (compiler), one dialect class per engine."""
