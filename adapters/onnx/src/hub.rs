//! Where the model and the runtime come from on first use: the int8 graph and tokenizer of
//! the sentence-transformers repository on the Hugging Face hub, and ONNX Runtime's shared
//! library from its PyPI wheel, each pinned by size and SHA-256. This crate only names them;
//! the composition fetches them (`memory-hub`).

use crate::catalogue::PinnedFile;

/// The hub repository of the model.
pub const HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The commit of [`HUB_REPO`] the files are pinned to.
pub const HUB_REVISION: &str = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41";

/// The graph [`HUB_FILES`] holds: the repository's own dynamic int8 export (weights signed
/// int8, each pass's inputs unsigned int8; the same bytes as its `model_qint8_avx512_vnni`
/// file), which runs on any CPU ONNX Runtime supports.
pub const HUB_MODEL_FILE: &str = "onnx/model_qint8_arm64.onnx";

/// The model id of vectors made by the graph in [`HUB_MODEL_FILE`] (its metadata names
/// none). Not the id of the graph `scripts/setup-onnx.sh` makes ([`crate::MODEL_ID`]): the
/// two quantise the same weights by different exports.
pub const HUB_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@onnx-qint8";

/// The files fetched from [`HUB_REPO`], each pinned by size and SHA-256.
pub const HUB_FILES: [PinnedFile; 2] = [
    PinnedFile::new(
        HUB_MODEL_FILE,
        Some(23_026_053),
        "4278337fd0ff3c68bfb6291042cad8ab363e1d9fbc43dcb499fe91c871902474",
    ),
    PinnedFile::new(
        "tokenizer.json",
        Some(466_247),
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
];

/// ONNX Runtime's shared library inside one of its PyPI wheels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeWheel {
    /// The wheel's path on PyPI's file host (`files.pythonhosted.org`).
    pub path: &'static str,
    /// The wheel's size in bytes.
    pub size: u64,
    /// The wheel's SHA-256 (the one PyPI publishes).
    pub sha256: &'static str,
    /// The library's path inside the wheel.
    pub member: &'static str,
    /// The library's size in bytes.
    pub library_size: u64,
    /// The library's SHA-256.
    pub library_sha256: &'static str,
}

impl RuntimeWheel {
    /// The wheel's file name.
    pub fn file_name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }
}

/// The name the library is given in the model's directory.
pub const RUNTIME_LIBRARY: &str = "libonnxruntime.so";

const X86_64: RuntimeWheel = RuntimeWheel {
    path: "packages/a3/81/55845186c20cba59f614991f4065dea148e48eeb9749893768c85ce64327/onnxruntime-1.32.0-cp312-cp312-manylinux_2_28_x86_64.whl",
    size: 27_780_211,
    sha256: "99e1074c4b2197accd5073052a465361be17b89c093b8ffb6e6bd8f986c52df8",
    member: "onnxruntime/capi/libonnxruntime.so.1.32.0",
    library_size: 34_824_680,
    library_sha256: "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
};

const AARCH64: RuntimeWheel = RuntimeWheel {
    path: "packages/4a/8f/1e43fb994513c7c7a9c6965272ef89d963c1bd4080993a6267bf913701d1/onnxruntime-1.32.0-cp312-cp312-manylinux_2_28_aarch64.whl",
    size: 23_196_724,
    sha256: "e36c187006e7a7c8b8d6d57f1a209dd63f52430dca6c282b177718ad6b841054",
    member: "onnxruntime/capi/libonnxruntime.so.1.32.0",
    library_size: 27_165_936,
    library_sha256: "49852228a93995158b2a813d4df487d47a1b76b0eaa894507ef49e91b6d7954a",
};

/// The wheel of ONNX Runtime 1.32.0 for this machine (Linux with glibc 2.28 or newer, on
/// x86-64 or 64-bit ARM), or `None` with the reason where there is none: there the float
/// embedder is used instead.
pub fn runtime_wheel() -> Result<RuntimeWheel, String> {
    wheel_for(
        std::env::consts::OS,
        std::env::consts::ARCH,
        cfg!(target_env = "gnu"),
    )
}

fn wheel_for(os: &str, arch: &str, glibc: bool) -> Result<RuntimeWheel, String> {
    match (os, arch, glibc) {
        ("linux", "x86_64", true) => Ok(X86_64),
        ("linux", "aarch64", true) => Ok(AARCH64),
        ("linux", _, true) => Err(format!(
            "ONNX Runtime publishes no library for Linux on {arch}"
        )),
        ("linux", _, false) => Err(
            "ONNX Runtime's published library needs glibc, and this build does not use it".into(),
        ),
        _ => Err(format!(
            "the int8 embedder fetches ONNX Runtime only for Linux, not {os}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_is_pinned_for_each_linux_architecture_and_no_other() {
        assert_eq!(
            wheel_for("linux", "x86_64", true).unwrap().file_name(),
            "onnxruntime-1.32.0-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert!(
            wheel_for("linux", "aarch64", true)
                .unwrap()
                .path
                .ends_with("aarch64.whl")
        );
        assert!(
            wheel_for("macos", "aarch64", false)
                .unwrap_err()
                .contains("macos")
        );
        assert!(
            wheel_for("linux", "riscv64", true)
                .unwrap_err()
                .contains("riscv64")
        );
        assert!(
            wheel_for("linux", "x86_64", false)
                .unwrap_err()
                .contains("glibc")
        );
    }
}
