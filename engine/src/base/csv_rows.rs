//! A CSV file as rows of text (a bulk send's recipients): csv-core parses (RFC 4180
//! quoting, `\r\n` or `\n`); this gathers its records. The delimiter is `,`, or `;` when
//! the header line has a `;` and no `,` (as spreadsheets write CSV in much of Europe).
//! A UTF-8 byte order mark is skipped and blank lines are dropped.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use csv_core::{ReadRecordResult, ReaderBuilder};

/// The most columns a row may have.
pub const MAX_COLUMNS: usize = 200;

/// The records of `input`, each a row of fields; `Err` says why it is not CSV we take.
pub fn rows(input: &[u8]) -> Result<Vec<Vec<String>>, String> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let header = input.split(|b| *b == b'\n').next().unwrap_or_default();
    let delimiter = if header.contains(&b';') && !header.contains(&b',') {
        b';'
    } else {
        b','
    };
    let mut reader = ReaderBuilder::new().delimiter(delimiter).build();
    let mut out = vec![0u8; input.len() + 1];
    let mut ends = vec![0usize; MAX_COLUMNS + 1];
    let mut rows = Vec::new();
    // A record may take several calls (its input ends first): where its bytes and field
    // ends have got to (`o`, `e`) carry over until it is complete.
    let (mut pos, mut o, mut e) = (0, 0, 0);
    loop {
        let (result, read, wrote, n_ends) =
            reader.read_record(&input[pos..], &mut out[o..], &mut ends[e..]);
        pos += read;
        o += wrote;
        e += n_ends;
        match result {
            ReadRecordResult::InputEmpty => {}
            ReadRecordResult::OutputFull => return Err("a row is too long".into()),
            ReadRecordResult::OutputEndsFull => {
                return Err(alloc::format!("a row has more than {MAX_COLUMNS} columns"));
            }
            ReadRecordResult::Record => {
                let row = fields(&out[..o], &ends[..e], rows.len() + 1)?;
                (o, e) = (0, 0);
                if row.iter().any(|f| !f.trim().is_empty()) {
                    rows.push(row);
                }
            }
            ReadRecordResult::End => return Ok(rows),
        }
    }
}

/// A record's fields (`ends` are where each ends in `out`) as text.
fn fields(out: &[u8], ends: &[usize], line: usize) -> Result<Vec<String>, String> {
    let mut start = 0;
    let mut row = Vec::with_capacity(ends.len());
    for &end in ends {
        let text = core::str::from_utf8(&out[start..end])
            .map_err(|_| alloc::format!("record {line} is not UTF-8 text"))?;
        row.push(String::from(text));
        start = end;
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::rows;

    #[test]
    fn quoting_crlf_semicolons_and_blank_lines() {
        let got =
            rows(b"\xEF\xBB\xBFemail,first_name\r\na@x.se,\"Ann, Jr\"\r\n\r\nb@x.se,Bo\n").unwrap();
        assert_eq!(
            got,
            [
                ["email", "first_name"],
                ["a@x.se", "Ann, Jr"],
                ["b@x.se", "Bo"]
            ]
        );
        let got = rows("email;name\nc@x.se;Åsa".as_bytes()).unwrap();
        assert_eq!(got, [["email", "name"], ["c@x.se", "Åsa"]]);
        assert!(rows(b"a\n\xff\n").is_err());
    }
}
