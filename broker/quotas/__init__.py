"""Client quotas (KIP-13, KIP-219, KIP-257): byte-rate and request-time quotas per user and client id."""
