"""`koord_image`: a component's OCI image (an oci-archive), built by hack/image/image_tool.py.

Three layers: //hack/image:base_layer (Debian's python3.11 and its libraries, the same bytes in
every image), //hack/image:deps_layer (the pinned Python packages), and the component's code
(its py_binary's runfiles from this repository under /app, plus the launcher /<binary>).
Nothing is downloaded; the output is byte-reproducible. Labels `revision` and `created` come
from `--define revision=SHA --define created=RFC3339` (default: unknown / the epoch).
"""

_REPO = "https://github.com/koordinator-sh/koordinator"

def _koord_image_impl(ctx):
    binary = ctx.attr.binary
    prog = ctx.attr.entrypoint or binary.label.name
    exe = binary[DefaultInfo].files_to_run.executable
    files = [
        f
        for f in binary[DefaultInfo].default_runfiles.files.to_list()
        if not f.short_path.startswith("../") and f != exe
    ]
    listing = ctx.actions.declare_file(ctx.label.name + ".files")
    ctx.actions.write(listing, "".join(["%s\t%s\n" % (f.short_path, f.path) for f in files]))

    code = ctx.actions.declare_file(ctx.label.name + ".code.tar.gz")
    code_json = ctx.actions.declare_file(ctx.label.name + ".code.tar.gz.json")
    python = ctx.file._python
    tool = ctx.file._tool
    ctx.actions.run(
        executable = python,
        arguments = [tool.path, "code", code.path, "--files", listing.path, "--launcher", "%s=%s" % (prog, ctx.attr.module)],
        inputs = files + [listing, tool],
        outputs = [code, code_json],
        mnemonic = "ImageCodeLayer",
        progress_message = "Image code layer %s" % ctx.label,
    )

    layers = [ctx.file._base, ctx.file._deps, code]
    layer_jsons = ctx.files._base_json + ctx.files._deps_json + [code_json]
    out = ctx.actions.declare_file(ctx.label.name + ".oci.tar")
    digest = ctx.actions.declare_file(ctx.label.name + ".digest")
    revision = ctx.var.get("revision", "unknown")
    created = ctx.var.get("created", "1970-01-01T00:00:00Z")
    labels = {
        "org.opencontainers.image.title": prog,
        "org.opencontainers.image.source": _REPO,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.licenses": "Apache-2.0",
    }
    args = [tool.path, "image", out.path, "--name", ctx.attr.repository + prog, "--tag", "latest"]
    args += ["--entrypoint", json.encode(["/" + prog]), "--user", ctx.attr.user]
    args += ["--env", "PATH=/usr/local/bin:/usr/bin:/bin", "--env", "PYTHONPATH=/app", "--env", "PYTHONDONTWRITEBYTECODE=1"]
    args += ["--created", created, "--digest-out", digest.path]
    for key in sorted(labels):
        args += ["--label", "%s=%s" % (key, labels[key])]
    for layer in layers:
        args += ["--layer", layer.path]
    ctx.actions.run(
        executable = python,
        arguments = args,
        inputs = layers + layer_jsons + [tool],
        outputs = [out, digest],
        mnemonic = "ImageArchive",
        progress_message = "Image %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out])),
        OutputGroupInfo(digest = depset([digest])),
    ]

_koord_image = rule(
    implementation = _koord_image_impl,
    attrs = {
        "binary": attr.label(mandatory = True, executable = True, cfg = "target"),
        "module": attr.string(mandatory = True),
        "entrypoint": attr.string(),
        "user": attr.string(default = "65532"),
        "repository": attr.string(default = "koordinator-sh/"),
        "_python": attr.label(default = "@local_python//:python3", allow_single_file = True),
        "_tool": attr.label(default = "//hack/image:image_tool.py", allow_single_file = True),
        "_base": attr.label(default = "//hack/image:base.tar.gz", allow_single_file = True),
        "_base_json": attr.label(default = "//hack/image:base.tar.gz.json", allow_files = True),
        "_deps": attr.label(default = "//hack/image:deps.tar.gz", allow_single_file = True),
        "_deps_json": attr.label(default = "//hack/image:deps.tar.gz.json", allow_files = True),
    },
)

def koord_image(name, binary, module, user = "65532", entrypoint = None, **kwargs):
    """One component image: `/<binary>` as entrypoint, running `python3 -m <module>`.

    Args:
      name: target name; builds `<name>.oci.tar` (oci-archive, tag `latest`).
      binary: the component's py_binary (its runfiles are the code layer; its name the entrypoint).
      module: the module the launcher runs (`manager.main`).
      user: the image's user: 65532 (nonroot) for the control plane, 0 for node agents.
      entrypoint: the launcher's name, if not the binary's.
      **kwargs: tags, visibility, ...
    """
    _koord_image(
        name = name,
        binary = binary,
        module = module,
        user = user,
        entrypoint = entrypoint or "",
        **kwargs
    )
