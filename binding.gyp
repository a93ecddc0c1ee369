{
  # Two targets: the cores build without any Node include
  # path, so an accidental <napi.h> in native/core fails here as it does in CMake.
  "target_defaults": {
    "cflags_cc": ["-std=c++17", "-O3", "-fvisibility=hidden", "-Wall", "-Wextra"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
    "xcode_settings": {
      "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
      "GCC_OPTIMIZATION_LEVEL": "3",
      "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
      "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
      "OTHER_CPLUSPLUSFLAGS": ["-Wall", "-Wextra"]
    },
    "msvs_settings": {
      "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17"], "ExceptionHandling": 1 }
    },
    "conditions": [
      # clang-cl rather than MSVC's cl: the squasher uses GCC/Clang builtins and
      # attributes, which cl does not know (docs/contributing.md, "Release and prebuilds").
      ["OS=='win'", { "msbuild_toolset": "ClangCL" }]
    ]
  },
  "targets": [
    {
      "target_name": "koa_buffer_core",
      "type": "static_library",
      "sources": [
        "native/core/md5.cc",
        "native/core/squash.cc",
        "native/core/squash/comments.cc",
        "native/core/squash/link_rewriting.cc",
        "native/core/squash/raw_text.cc"
      ],
      "include_dirs": ["native"],
      "cflags": ["-fPIC"],
      # flock(2) is POSIX: Windows builds leave it out and FileLock refuses there
      # (docs/decisions/0014-filelock-on-windows.md).
      "conditions": [["OS!='win'", { "sources": ["native/core/flock.cc"] }]]
    },
    {
      "target_name": "koa_buffer",
      "dependencies": [
        "koa_buffer_core",
        "<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"
      ],
      "sources": [
        "native/binding/addon.cc",
        "native/binding/md5.cc",
        "native/binding/squash.cc"
      ],
      "conditions": [["OS!='win'", { "sources": ["native/binding/flock.cc"], "defines": ["KB_HAVE_FLOCK=1"] }]],
      "include_dirs": ["native"],
      "defines": [
        # 8 loads on every Node 20 release; nothing here needs 9.
        "NAPI_VERSION=8",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        # An exception thrown while the VM is shutting down cannot reach JS;
        # swallowing it beats aborting the process (sharp, zstd-napi do the same).
        "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS",
        "KB_SOURCE_STAMP=<!(node scripts/source-stamp.mjs)"
      ]
    }
  ]
}
