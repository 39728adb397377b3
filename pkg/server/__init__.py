"""The /healthz, /readyz and /metrics HTTP server of every component."""

from pkg.server.server import Check, Checks, Server, leader_election_check, parse_address

__all__ = ["Check", "Checks", "Server", "leader_election_check", "parse_address"]
