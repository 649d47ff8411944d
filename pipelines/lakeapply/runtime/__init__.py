"""Runtime: the Spark session, the warehouse layout and settings shared by every stage."""
