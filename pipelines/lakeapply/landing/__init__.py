"""The landing side: what capture tools (or the project's workload generator) write."""
