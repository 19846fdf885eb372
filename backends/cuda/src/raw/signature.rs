//! A raw kernel's signature in GrCUDA's NIDL syntax: its parameters ([`RawParam`]), the parser
//! ([`parse_signature`]) and its positioned errors.

use hoplite_core::device_kernel::ScalarType;

use crate::CudaError;

/// How a raw kernel uses a pointer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointerDirection {
    /// Read only (`in`, `const`).
    In,
    /// Written (`out`).
    Out,
    /// Read and written (`inout`, or no direction).
    InOut,
}

impl PointerDirection {
    /// Whether the kernel writes through the pointer.
    ///
    /// ```
    /// use hoplite_cuda::raw::PointerDirection;
    /// assert!(!PointerDirection::In.writes());
    /// assert!(PointerDirection::InOut.writes());
    /// ```
    pub fn writes(self) -> bool {
        self != PointerDirection::In
    }
}

/// One parameter of a raw kernel's signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RawParam {
    /// A device pointer to elements of `element`.
    Pointer {
        /// The parameter's name.
        name: String,
        /// How the kernel uses it.
        direction: PointerDirection,
        /// The element type.
        element: ScalarType,
    },
    /// A scalar passed by value.
    Scalar {
        /// The parameter's name.
        name: String,
        /// Its type.
        ty: ScalarType,
    },
}

impl RawParam {
    /// The parameter's name.
    pub fn name(&self) -> &str {
        match self {
            RawParam::Pointer { name, .. } | RawParam::Scalar { name, .. } => name,
        }
    }

    /// The bytes the parameter takes in the kernel's parameter block (8 for a pointer).
    pub fn size(&self) -> usize {
        match self {
            RawParam::Pointer { .. } => 8,
            RawParam::Scalar { ty, .. } => ty.size(),
        }
    }
}

/// A parsed signature: the kernel's name (its `extern "C"` symbol) and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawSignature {
    /// The kernel's name.
    pub name: String,
    /// The parameters, in order.
    pub params: Vec<RawParam>,
}

/// Parses a signature in GrCUDA's NIDL syntax (see the [module](crate::raw) documentation).
///
/// ```
/// use hoplite_core::device_kernel::ScalarType;
/// use hoplite_cuda::CudaError;
/// use hoplite_cuda::raw::{parse_signature, PointerDirection, RawParam};
///
/// let sig = parse_signature("axpy(y: out pointer double, x: in pointer double, a: double, n: sint64)")?;
/// assert_eq!(sig.name, "axpy");
/// assert_eq!(sig.params[0], RawParam::Pointer {
///     name: "y".into(), direction: PointerDirection::Out, element: ScalarType::F64,
/// });
/// assert_eq!(sig.params[3], RawParam::Scalar { name: "n".into(), ty: ScalarType::I64 });
///
/// let e = parse_signature("axpy(y: out pointer, n: sint64)").unwrap_err();
/// assert!(matches!(e, CudaError::Signature { position: 19, .. }), "{e}");
/// # Ok::<(), CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::Signature`] with the byte offset where the text stops making sense and what
/// was expected there.
pub fn parse_signature(signature: &str) -> Result<RawSignature, CudaError> {
    Parser {
        text: signature,
        at: 0,
    }
    .signature()
}

/// A cursor over the signature text.
struct Parser<'s> {
    text: &'s str,
    at: usize,
}

impl<'s> Parser<'s> {
    fn fail<T>(&self, at: usize, reason: impl Into<String>) -> Result<T, CudaError> {
        Err(CudaError::Signature {
            signature: self.text.to_owned(),
            position: at,
            reason: reason.into(),
        })
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    /// An identifier (`[A-Za-z_][A-Za-z0-9_]*`) and where it starts, after white space.
    fn ident(&mut self, what: &str) -> Result<(usize, &'s str), CudaError> {
        self.skip_ws();
        let start = self.at;
        let rest = &self.text[start..];
        let len = rest
            .char_indices()
            .find(|&(k, c)| !(c == '_' || c.is_ascii_alphabetic() || (k > 0 && c.is_ascii_digit())))
            .map_or(rest.len(), |(k, _)| k);
        if len == 0 {
            let found = self.peek().map_or("the end".to_owned(), |c| format!("`{c}`"));
            return self.fail(start, format!("expected {what}, found {found}"));
        }
        self.at += len;
        Ok((start, &rest[..len]))
    }

    /// The punctuation `c`, after white space.
    fn expect(&mut self, c: char, what: &str) -> Result<(), CudaError> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            Ok(())
        } else {
            let found = self.peek().map_or("the end".to_owned(), |c| format!("`{c}`"));
            self.fail(self.at, format!("expected {what}, found {found}"))
        }
    }

    fn signature(mut self) -> Result<RawSignature, CudaError> {
        let (_, name) = self.ident("the kernel's name")?;
        self.skip_ws();
        if self.text[self.at..].starts_with("::") {
            return self.fail(
                self.at,
                "C++ names are not mangled here; declare the kernel `extern \"C\"` and give its plain name",
            );
        }
        self.expect('(', "`(` after the kernel's name")?;
        let mut params: Vec<RawParam> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(')') {
            self.at += 1;
        } else {
            loop {
                let (at, pname) = self.ident("a parameter name")?;
                if params.iter().any(|p| p.name() == pname) {
                    return self.fail(at, format!("parameter `{pname}` is named twice"));
                }
                self.expect(':', &format!("`:` after parameter `{pname}`"))?;
                params.push(self.param_type(pname)?);
                self.skip_ws();
                match self.peek() {
                    Some(',') => self.at += 1,
                    Some(')') => {
                        self.at += 1;
                        break;
                    }
                    other => {
                        let found = other.map_or("the end".to_owned(), |c| format!("`{c}`"));
                        return self.fail(
                            self.at,
                            format!("expected `,` or `)` after a parameter, found {found}"),
                        );
                    }
                }
            }
        }
        self.skip_ws();
        if self.at < self.text.len() {
            return self.fail(self.at, "unexpected text after `)`");
        }
        Ok(RawSignature {
            name: name.to_owned(),
            params,
        })
    }

    /// `[direction] pointer TYPE` or `TYPE`.
    fn param_type(&mut self, name: &str) -> Result<RawParam, CudaError> {
        let (at, word) = self.ident(&format!("the type of parameter `{name}`"))?;
        let direction = match word {
            "in" | "const" => Some(PointerDirection::In),
            "out" => Some(PointerDirection::Out),
            "inout" => Some(PointerDirection::InOut),
            _ => None,
        };
        let pointer_at = if direction.is_some() {
            let (pat, pointer) = self.ident(&format!("`pointer` after `{word}`"))?;
            if pointer != "pointer" {
                return self.fail(
                    pat,
                    format!("expected `pointer` after `{word}`, found `{pointer}`"),
                );
            }
            Some(pat)
        } else if word == "pointer" {
            Some(at)
        } else {
            None
        };
        if pointer_at.is_some() {
            self.skip_ws();
            let type_at = self.at;
            let element = match self.peek() {
                Some(c) if c.is_ascii_alphabetic() => {
                    let (tat, t) = self.ident("the element type")?;
                    self.scalar(tat, t)?
                }
                _ => {
                    return self.fail(
                        type_at,
                        format!("give the element type of pointer `{name}`, such as `pointer double`"),
                    );
                }
            };
            return Ok(RawParam::Pointer {
                name: name.to_owned(),
                direction: direction.unwrap_or(PointerDirection::InOut),
                element,
            });
        }
        Ok(RawParam::Scalar {
            name: name.to_owned(),
            ty: self.scalar(at, word)?,
        })
    }

    /// An NFI scalar type name.
    fn scalar(&self, at: usize, word: &str) -> Result<ScalarType, CudaError> {
        match word {
            "sint32" => Ok(ScalarType::I32),
            "uint32" => Ok(ScalarType::U32),
            "sint64" => Ok(ScalarType::I64),
            "uint64" => Ok(ScalarType::U64),
            "float" => Ok(ScalarType::F32),
            "double" => Ok(ScalarType::F64),
            "bool" => Ok(ScalarType::Bool),
            "sint8" | "uint8" | "sint16" | "uint16" | "char" => self.fail(
                at,
                format!("`{word}` is not a device scalar of hoplite; use sint32, uint32, sint64, uint64, float, double or bool"),
            ),
            _ => self.fail(
                at,
                format!("unknown type `{word}`; use sint32, uint32, sint64, uint64, float, double or bool, or `in|out|inout pointer TYPE`"),
            ),
        }
    }
}
