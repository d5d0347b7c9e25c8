//! The model's weights read from `model.safetensors` one tensor at a time, straight into the
//! tensors' own storage, floating point ones as f32 or f16 (the service holds the model in f16,
//! see the crate docs: f32 weights are converted 64 KiB at a time, never held whole).
//!
//! Reading the whole file into memory and then converting it (candle's `load_buffer`) held the
//! file (87 MB for MiniLM in f32) and the tensors at once; here the only buffer besides the
//! tensors is 64 KiB, so loading the model peaks at the size of the weights. The file's SHA-256
//! is computed on the way (every byte is read once, in order), and it equals the digest of the
//! whole file, so vectors persisted by an earlier build stay valid.
//!
//! The format: an 8-byte little-endian header length, a JSON header (`name → {dtype, shape,
//! data_offsets}` plus an optional `__metadata__`), then the data. Every offset and size is
//! checked against the header and the file before anything is allocated.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use half::slice::HalfFloatSliceExt;
use sha2::{Digest, Sha256};

use crate::EmbedError;

/// The longest header accepted (MiniLM's is ~10 KB).
const MAX_HEADER_BYTES: u64 = 16 << 20;

#[derive(serde::Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: (u64, u64),
}

/// The tensors of a safetensors file (floating point ones as `float`: f32 or f16) and the SHA-256
/// of the file.
pub(crate) fn load(path: &Path, float: DType) -> Result<(HashMap<String, Tensor>, Sha256), EmbedError> {
    debug_assert!(matches!(float, DType::F32 | DType::F16));
    let bad = |message: String| EmbedError::Config {
        path: path.to_owned(),
        message,
    };
    let io = |source: std::io::Error| EmbedError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut reader = Hashing {
        inner: BufReader::with_capacity(64 * 1024, file),
        digest: Sha256::new(),
    };
    let mut len = [0u8; 8];
    reader.read_exact(&mut len).map_err(io)?;
    let header_len = u64::from_le_bytes(len);
    if header_len > MAX_HEADER_BYTES || 8 + header_len > file_len {
        return Err(bad(format!(
            "safetensors header of {header_len} bytes does not fit the file"
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    reader.read_exact(&mut header).map_err(io)?;
    let mut entries: HashMap<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| bad(format!("safetensors header: {e}")))?;
    entries.remove("__metadata__");
    let data_start = 8 + header_len;
    let mut tensors: Vec<(String, Entry)> = entries
        .into_iter()
        .map(|(name, v)| {
            serde_json::from_value::<Entry>(v)
                .map(|e| (name.clone(), e))
                .map_err(|e| bad(format!("safetensors entry {name}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    tensors.sort_by_key(|(_, e)| e.data_offsets);
    let mut at = 0u64; // position in the data section
    let mut out = HashMap::with_capacity(tensors.len());
    for (name, e) in tensors {
        let (start, end) = e.data_offsets;
        let dtype = dtype_of(&e.dtype).ok_or_else(|| bad(format!("tensor {name}: unsupported dtype {}", e.dtype)))?;
        let elements = e.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        let size = elements.and_then(|n| n.checked_mul(dtype.size_in_bytes() as u64));
        if start < at || end < start || size != Some(end - start) || data_start + end > file_len {
            return Err(bad(format!(
                "tensor {name}: data offsets {start}..{end} do not match its shape or the file"
            )));
        }
        skip(&mut reader, start - at).map_err(io)?;
        let tensor = if dtype == DType::F32 {
            let count = ((end - start) / 4) as usize;
            let mut chunk = [0u8; 64 * 1024];
            let mut left = (end - start) as usize;
            if float == DType::F16 {
                let mut values: Vec<half::f16> = Vec::with_capacity(count);
                let mut wide = Vec::with_capacity(chunk.len() / 4);
                while left > 0 {
                    let n = read_chunk(&mut reader, &mut chunk, &mut left).map_err(io)?;
                    wide.clear();
                    wide.extend(
                        chunk[..n]
                            .chunks_exact(4)
                            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    );
                    let at = values.len();
                    values.resize(at + wide.len(), half::f16::ZERO);
                    values[at..].convert_from_f32_slice(&wide);
                }
                Tensor::from_vec(values, e.shape.as_slice(), &Device::Cpu)
            } else {
                let mut values = Vec::with_capacity(count);
                while left > 0 {
                    let n = read_chunk(&mut reader, &mut chunk, &mut left).map_err(io)?;
                    values.extend(
                        chunk[..n]
                            .chunks_exact(4)
                            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    );
                }
                Tensor::from_vec(values, e.shape.as_slice(), &Device::Cpu)
            }
        } else {
            let mut bytes = vec![0u8; (end - start) as usize];
            reader.read_exact(&mut bytes).map_err(io)?;
            let t = Tensor::from_raw_buffer(&bytes, dtype, &e.shape, &Device::Cpu);
            t.and_then(|t| if dtype.is_float() { t.to_dtype(float) } else { Ok(t) })
        }
        .map_err(|e| bad(format!("tensor {name}: {e}")))?;
        at = end;
        out.insert(name, tensor);
    }
    // the rest of the file (padding, if any) belongs to the digest too
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(io)?;
    Ok((out, reader.digest))
}

fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "F32" => DType::F32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F64" => DType::F64,
        "I64" => DType::I64,
        "U32" => DType::U32,
        "U8" => DType::U8,
        _ => return None,
    })
}

/// Reads the next `min(left, chunk.len())` bytes into `chunk`; returns how many.
fn read_chunk(reader: &mut impl Read, chunk: &mut [u8], left: &mut usize) -> std::io::Result<usize> {
    let n = (*left).min(chunk.len());
    reader.read_exact(&mut chunk[..n])?;
    *left -= n;
    Ok(n)
}

fn skip(reader: &mut impl Read, n: u64) -> std::io::Result<()> {
    let copied = std::io::copy(&mut reader.take(n), &mut std::io::sink())?;
    if copied == n {
        Ok(())
    } else {
        Err(std::io::ErrorKind::UnexpectedEof.into())
    }
}

/// A reader that hashes what it reads.
struct Hashing<R> {
    inner: R,
    digest: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file with the given tensors (name, dtype, shape, bytes), data in order.
    fn file(tensors: &[(&str, &str, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            let start = data.len();
            data.extend_from_slice(bytes);
            header.insert(
                (*name).into(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let header = serde_json::to_vec(&header).unwrap();
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend(header);
        out.extend(data);
        out
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn reads_every_tensor_as_candle_does_and_digests_the_whole_file() {
        let bytes = file(&[
            ("w", "F32", vec![2, 3], f32_bytes(&[1.0, -2.5, 3.25, 0.0, 1e-7, 7.0])),
            (
                "ids",
                "I64",
                vec![3],
                [0i64, 1, 2].iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            (
                "h",
                "F16",
                vec![2],
                [0x3c00u16, 0xc000].iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, &bytes).unwrap();
        let (tensors, digest) = load(&path, DType::F32).unwrap();
        assert_eq!(digest.finalize()[..], Sha256::digest(&bytes)[..]);
        let reference = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu).unwrap();
        assert_eq!(tensors.len(), 3);
        for (name, t) in &tensors {
            let r = &reference[name];
            let r = if r.dtype().is_float() {
                r.to_dtype(DType::F32).unwrap()
            } else {
                r.clone()
            };
            assert_eq!(t.dims(), r.dims(), "{name}");
            assert_eq!(t.dtype(), r.dtype(), "{name}");
            assert_eq!(
                t.to_dtype(DType::F64)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f64>()
                    .unwrap(),
                r.to_dtype(DType::F64)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f64>()
                    .unwrap(),
                "{name}"
            );
        }
    }

    #[test]
    fn reads_floats_as_f16_rounded_to_nearest_and_digests_the_same() {
        let values = [1.0f32, -2.5, std::f32::consts::PI, 65504.0, 1e-7, 1.0 / 3.0];
        // more than one 64 KiB chunk, so the conversion runs across chunk boundaries
        let many: Vec<f32> = (0..40_000).map(|i| (i as f32 * 0.37).sin() * 7.0).collect();
        let bytes = file(&[
            ("w", "F32", vec![2, 3], f32_bytes(&values)),
            ("big", "F32", vec![40_000], f32_bytes(&many)),
            ("ids", "I64", vec![1], 7i64.to_le_bytes().to_vec()),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, &bytes).unwrap();
        let (tensors, digest) = load(&path, DType::F16).unwrap();
        assert_eq!(digest.finalize()[..], Sha256::digest(&bytes)[..]);
        assert_eq!(tensors["w"].dtype(), DType::F16);
        assert_eq!(tensors["w"].dims(), &[2, 3]);
        let got: Vec<half::f16> = tensors["w"].flatten_all().unwrap().to_vec1().unwrap();
        let want: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f32(v)).collect();
        assert_eq!(got, want);
        let got: Vec<half::f16> = tensors["big"].to_vec1().unwrap();
        let want: Vec<half::f16> = many.iter().map(|&v| half::f16::from_f32(v)).collect();
        assert_eq!(got, want);
        assert_eq!(tensors["ids"].dtype(), DType::I64, "integers stay as they are");
    }

    #[test]
    fn refuses_offsets_that_do_not_match_the_shape_or_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        // 6 floats announced, 5 present
        let mut bytes = file(&[("w", "F32", vec![2, 3], f32_bytes(&[1.0; 6]))]);
        bytes.truncate(bytes.len() - 4);
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(&path, DType::F32).is_err());
        // a shape that disagrees with the offsets
        std::fs::write(&path, file(&[("w", "F32", vec![4], f32_bytes(&[1.0; 3]))])).unwrap();
        assert!(load(&path, DType::F32).is_err());
        // a header longer than the file
        let mut bytes = u64::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(&path, DType::F32).is_err());
    }
}
