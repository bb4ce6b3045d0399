"""SQL generation: one statement per vertex (compiler), one dialect class per engine."""

JOB_DIALECTS = ("postgres", "duckdb", "duckdb-builtin")    # what compiled jobs are written in
