"""Offline stand-in for rules_python's //python:defs.bzl.

Forwards to Bazel's built-in Python rules so BUILD files can load from
`@rules_python//python:defs.bzl` on Debian's Bazel 4.2.3 (WORKSPACE mode, no downloads) and
with the real rules_python (MODULE.bazel) on a current Bazel alike.
"""

load("@bazel_tools//tools/python:toolchain.bzl", _py_runtime_pair = "py_runtime_pair")

def py_library(**attrs):
    native.py_library(**attrs)

def py_binary(**attrs):
    native.py_binary(**attrs)

def py_test(**attrs):
    native.py_test(**attrs)

def py_runtime(**attrs):
    native.py_runtime(**attrs)

py_runtime_pair = _py_runtime_pair
