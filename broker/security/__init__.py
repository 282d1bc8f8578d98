"""Listeners' security: TLS contexts, SASL mechanisms and credentials, and the ACL authorizer."""
