"""Runtime hook gRPC API (upstream `apis/runtime/v1alpha1/api.proto`).

`from api.runtime.v1alpha1 import api_pb2, api_pb2_grpc` gives the protobuf messages and the
RuntimeHookService stubs. Under Bazel they are the outputs of the `api_pb2_gen` genrule (this
package's BUILD.bazel), placed beside this file. In a plain checkout (`pytest`, `python -m`)
they are generated from api.proto on first import into `_generated/` (gitignored), and again
whenever api.proto changes.
"""

from pathlib import Path

if not (Path(__file__).parent / "api_pb2.py").exists():
    from api.runtime.v1alpha1 import _protogen

    __path__.append(str(_protogen.ensure_generated()))
