"""The scheduler interface: the only language spoken between the Kubernetes shim and the core.

``si_pb2`` holds the protobuf messages (generated from ``si.proto``), ``resources`` the resource
arithmetic, ``quantity`` the parsing of Kubernetes quantities, ``constants`` the well-known tag keys.
"""
