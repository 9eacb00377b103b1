"""The replica environment contract: build what Vertex sets for a replica, and parse it back."""
