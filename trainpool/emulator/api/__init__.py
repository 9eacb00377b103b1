"""One module per gRPC service the emulator serves: requests in, calls, answers out."""
