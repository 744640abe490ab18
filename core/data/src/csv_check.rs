//! A linear pre-scan of a CSV file before Polars reads it, so every structural problem is named by
//! its line and column instead of reaching the user as a reader's message without a position (or
//! not at all): text that is not UTF-8, a row with more or fewer fields than the header, a header
//! naming one column twice (Polars would rename the second and use it as a feature), a quote never
//! closed. Quoted fields (with `""` escapes and separators or line breaks inside) are understood.

use std::path::Path;

use crate::error::DataError;

/// One record's fields as found by [`records`]: the line it starts on and its raw fields.
struct Record<'a> {
    line: usize,
    fields: Vec<&'a [u8]>,
}

/// Split `bytes` into records of fields (quote-aware), stopping after `limit` records. Blank lines
/// are skipped, as the reader skips them. Returns the line where an unclosed quote starts, if any.
fn records(bytes: &[u8], separator: u8, limit: usize) -> (Vec<Record<'_>>, Option<usize>) {
    let mut out = Vec::new();
    let (mut line, mut i) = (1usize, 0usize);
    while i < bytes.len() && out.len() < limit {
        let start_line = line;
        let mut fields = Vec::new();
        let mut field_start = i;
        let mut in_quotes = false;
        loop {
            if i >= bytes.len() {
                if in_quotes {
                    return (out, Some(start_line));
                }
                fields.push(&bytes[field_start..i]);
                break;
            }
            let b = bytes[i];
            if in_quotes {
                if b == b'"' {
                    if bytes.get(i + 1) == Some(&b'"') {
                        i += 1;
                    } else {
                        in_quotes = false;
                    }
                } else if b == b'\n' {
                    line += 1;
                }
            } else if b == b'"' {
                in_quotes = true;
            } else if b == separator {
                fields.push(&bytes[field_start..i]);
                field_start = i + 1;
            } else if b == b'\n' {
                let end = if i > field_start && bytes[i - 1] == b'\r' { i - 1 } else { i };
                fields.push(&bytes[field_start..end]);
                line += 1;
                i += 1;
                break;
            }
            i += 1;
        }
        let blank = fields.len() == 1 && fields[0].iter().all(|b| b.is_ascii_whitespace());
        if !blank {
            out.push(Record { line: start_line, fields });
        }
    }
    (out, None)
}

/// The first invalid UTF-8 byte of `bytes`, as (line, column in characters, byte offset).
fn invalid_utf8(bytes: &[u8]) -> Option<(usize, usize, usize)> {
    let at = std::str::from_utf8(bytes).err()?.valid_up_to();
    let valid = &bytes[..at];
    let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = valid.iter().rposition(|&b| b == b'\n').map(|p| p + 1).unwrap_or(0);
    let col = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
    Some((line, col, at))
}

/// A header cell as a column name: trimmed, outer quotes removed.
fn column_name(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    let t = text.trim();
    let t = t.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(t);
    t.replace("\"\"", "\"").trim().to_string()
}

/// Refuse a header that names a column twice.
fn check_header(path: &Path, names: &[String]) -> Result<(), DataError> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if let Some(first) = seen.insert(n.as_str(), i) {
            return Err(DataError::DuplicateColumn { path: path.to_path_buf(), column: n.clone(), first: first + 1, second: i + 1 });
        }
    }
    Ok(())
}

/// Read `path`, refusing a folder with a clear message.
fn read(path: &Path) -> Result<Vec<u8>, DataError> {
    let err = |message: String| DataError::Read { path: path.to_path_buf(), message };
    if path.is_dir() {
        return Err(err("is a folder, not a data file; name a CSV or Parquet file".into()));
    }
    std::fs::read(path).map_err(|e| err(e.to_string()))
}

/// The column names of CSV file `path` from its header line, checked (UTF-8, no name twice).
pub fn header(path: &Path, separator: u8) -> Result<Vec<String>, DataError> {
    let bytes = read(path)?;
    let (recs, unclosed) = records(&bytes, separator, 1);
    let Some(first) = recs.first() else {
        return match unclosed {
            Some(line) => Err(DataError::Structure { path: path.to_path_buf(), line, message: "a quote is never closed".into() }),
            None => Err(DataError::Empty { path: path.to_path_buf() }),
        };
    };
    let header_end = first.fields.last().map(|f| f.as_ptr() as usize - bytes.as_ptr() as usize + f.len()).unwrap_or(0);
    if let Some((line, col, at)) = invalid_utf8(&bytes[..header_end]) {
        return Err(DataError::Utf8 { path: path.to_path_buf(), line, col, byte: bytes[at] });
    }
    let names: Vec<String> = first.fields.iter().map(|f| column_name(f)).collect();
    check_header(path, &names)?;
    Ok(names)
}

/// The distinct cells of each of `columns` in CSV file `path` (trimmed and unquoted, the
/// `missing` markers left out), at most `cap` per column: one pass over the bytes, as [`scan`]
/// makes, for what `validate` can check of the label and the protected columns before a run. A
/// column the header lacks, or a row too short to reach it, contributes nothing.
pub fn distinct_cells(
    path: &Path,
    separator: u8,
    columns: &[String],
    missing: &[String],
    cap: usize,
) -> Result<Vec<std::collections::BTreeSet<String>>, DataError> {
    let bytes = read(path)?;
    let (recs, _) = records(&bytes, separator, usize::MAX);
    let mut out = vec![std::collections::BTreeSet::new(); columns.len()];
    let Some((header, rows)) = recs.split_first() else { return Ok(out) };
    let names: Vec<String> = header.fields.iter().map(|f| column_name(f)).collect();
    let at: Vec<Option<usize>> = columns.iter().map(|c| names.iter().position(|n| n == c)).collect();
    for row in rows {
        for (seen, index) in out.iter_mut().zip(&at) {
            let Some(field) = index.and_then(|i| row.fields.get(i)) else { continue };
            if seen.len() >= cap {
                continue;
            }
            let cell = column_name(field);
            if !missing.contains(&cell) {
                seen.insert(cell);
            }
        }
    }
    Ok(out)
}

/// Check the whole CSV file `path`: UTF-8 text, a header without repeated names, every row with
/// as many fields as the header, every quote closed. One pass over the bytes.
pub fn scan(path: &Path, separator: u8) -> Result<(), DataError> {
    let bytes = read(path)?;
    scan_bytes(path, &bytes, separator)
}

/// [`scan`] over bytes already read (`path` names them in messages).
pub fn scan_bytes(path: &Path, bytes: &[u8], separator: u8) -> Result<(), DataError> {
    if let Some((line, col, at)) = invalid_utf8(bytes) {
        return Err(DataError::Utf8 { path: path.to_path_buf(), line, col, byte: bytes[at] });
    }
    let (recs, unclosed) = records(bytes, separator, usize::MAX);
    let Some(first) = recs.first() else { return Err(DataError::Empty { path: path.to_path_buf() }) };
    let names: Vec<String> = first.fields.iter().map(|f| column_name(f)).collect();
    check_header(path, &names)?;
    for r in &recs[1..] {
        if r.fields.len() != names.len() {
            return Err(DataError::Structure {
                path: path.to_path_buf(),
                line: r.line,
                message: format!("{} fields where the header has {} ({})", r.fields.len(), names.len(), names.join(", ")),
            });
        }
    }
    if let Some(line) = unclosed {
        return Err(DataError::Structure { path: path.to_path_buf(), line, message: "a quote opened here is never closed".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_text(text: &[u8]) -> Result<(), String> {
        scan_bytes(Path::new("t.csv"), text, b',').map_err(|e| e.to_string())
    }

    #[test]
    fn well_formed_files_pass_with_quotes_crlf_and_blank_lines() {
        let text = b"a,b,c\r\n1,\"x, y\",3\r\n\r\n4,\"multi\nline \"\"q\"\"\",6\n";
        assert_eq!(scan_text(text), Ok(()));
        // Three records (the blank line skipped), each of three fields, a quoted separator, CR LF
        // and a quoted line break inside a field; the third record starts on line 4.
        let (found, unclosed) = records(text, b',', usize::MAX);
        let split: Vec<(usize, Vec<&[u8]>)> = found.iter().map(|r| (r.line, r.fields.clone())).collect();
        let bytes = |fields: &[&'static str]| fields.iter().map(|f| f.as_bytes()).collect::<Vec<&[u8]>>();
        let want =
            vec![(1, bytes(&["a", "b", "c"])), (2, bytes(&["1", "\"x, y\"", "3"])), (4, bytes(&["4", "\"multi\nline \"\"q\"\"\"", "6"]))];
        assert_eq!((split, unclosed), (want, None));
    }

    #[test]
    fn a_ragged_row_is_named_by_its_line() {
        let e = scan_text(b"a,b,c\n1,2,3\n4,5\n7,8,9\n").unwrap_err();
        assert!(e.contains("t.csv: line 3: 2 fields where the header has 3"), "{e}");
        let e = scan_text(b"a,b\n1,2\n\"q\nx\",2,3\n").unwrap_err();
        assert!(e.contains("line 3: 3 fields"), "a quoted line break counts from the record's first line: {e}");
    }

    #[test]
    fn bad_utf8_is_named_by_line_and_column() {
        let e = scan_text(b"a,b\n1,2\n3,\xe9t\xe9\n").unwrap_err();
        assert!(e.contains("t.csv: line 3, column 3: invalid UTF-8 (byte 0xe9)"), "{e}");
    }

    #[test]
    fn a_repeated_column_name_is_refused() {
        let e = scan_text(b"age, sex,age\n1,2,3\n").unwrap_err();
        assert!(e.contains("column `age` appears twice in the header (columns 1 and 3)"), "{e}");
    }

    #[test]
    fn an_unclosed_quote_is_named() {
        let e = scan_text(b"a,b\n1,\"2\n3,4\n").unwrap_err();
        assert!(e.contains("line 2: a quote opened here is never closed"), "{e}");
    }
}
