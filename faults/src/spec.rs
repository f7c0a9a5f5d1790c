//! The textual fault-rule grammar used by the `gantry-fault-server` binary, so benchmark
//! scripts can configure faults without writing Rust.

use std::time::Duration;

use crate::faults::Fault;
use crate::rules::{Match, Op, Rule};

/// Parses `KIND[,op=OP][,every=N][,p=P][,times=N][,key=K][,range_start=B][,part=N]` into a
/// rule, so the binary (and scripts) share one grammar with the library.
///
/// KIND: `503` (SlowDown), `500` (InternalError), `request-timeout`, `403` (ExpiredToken),
/// `404` (NoSuchKey), `reset` (ResetBeforeHead), `reset-mid` (ResetMidBody), `reset-after`
/// (ResetAfterAct: the server acts, then resets instead of answering), `short`,
/// `stall=SECS` (fractional seconds allowed), `trickle=BYTES_PER_SEC`, `flip`, `wrong-etag`.
/// OP is an [`Op`] variant name. Keys cannot contain `,`.
pub fn parse_fault_spec(s: &str) -> Result<Rule, String> {
    let mut items = s.split(',').map(str::trim);
    let kind = items.next().filter(|k| !k.is_empty()).ok_or_else(|| format!("empty fault spec: {s:?}"))?;
    let (name, arg) = match kind.split_once('=') {
        Some((n, a)) => (n.trim(), Some(a.trim())),
        None => (kind, None),
    };
    let need_arg = |what: &str| arg.ok_or_else(|| format!("fault kind {name:?} needs a value: {name}={what}"));
    let no_arg = |f: Fault| match arg {
        Some(_) => Err(format!("fault kind {name:?} takes no value")),
        None => Ok(f),
    };
    let fault = match name {
        "503" => no_arg(Fault::slow_down())?,
        "500" => no_arg(Fault::internal_error())?,
        "request-timeout" => no_arg(Fault::request_timeout())?,
        "403" => no_arg(Fault::expired_token())?,
        "404" => no_arg(Fault::not_found())?,
        "reset" => no_arg(Fault::ResetBeforeHead)?,
        "reset-mid" => no_arg(Fault::ResetMidBody)?,
        "reset-after" => no_arg(Fault::ResetAfterAct)?,
        "short" => no_arg(Fault::ShortBody)?,
        "flip" => no_arg(Fault::FlipByte)?,
        "wrong-etag" => no_arg(Fault::WrongEtag)?,
        "stall" => {
            let secs: f64 = need_arg("SECS")?.parse().map_err(|e| format!("bad stall seconds: {e}"))?;
            if !secs.is_finite() || secs < 0.0 {
                return Err(format!("bad stall seconds: {secs}"));
            }
            Fault::Stall(Duration::from_secs_f64(secs))
        }
        "trickle" => {
            let bps: u64 = need_arg("BYTES_PER_SEC")?.parse().map_err(|e| format!("bad trickle rate: {e}"))?;
            if bps == 0 {
                return Err("trickle rate must be > 0".to_string());
            }
            Fault::Trickle { bytes_per_sec: bps }
        }
        other => return Err(format!("unknown fault kind {other:?}")),
    };
    let mut when = Match::any();
    let mut times = None;
    for item in items {
        let (k, v) = item.split_once('=').ok_or_else(|| format!("expected name=value, got {item:?}"))?;
        let (k, v) = (k.trim(), v.trim());
        let num = |what: &str| v.parse::<u64>().map_err(|e| format!("bad {what} {v:?}: {e}"));
        match k {
            "op" => when.op = Some(Op::from_name(v).ok_or_else(|| format!("unknown op {v:?}"))?),
            "every" => {
                let n = num("every")?;
                if n == 0 {
                    return Err("every must be >= 1".to_string());
                }
                when.every_nth = Some(n);
            }
            "p" => {
                let p: f64 = v.parse().map_err(|e| format!("bad probability {v:?}: {e}"))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(format!("probability {p} not in 0..=1"));
                }
                when.probability = Some(p);
            }
            "times" => times = Some(num("times")?),
            "key" => when.key = Some(v.to_string()),
            "range_start" => when.range_start = Some(num("range_start")?),
            "part" => when.part_number = Some(u32::try_from(num("part")?).map_err(|_| format!("part {v} too large"))?),
            other => return Err(format!("unknown fault option {other:?}")),
        }
    }
    Ok(Rule { when, fault, times })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kinds_and_options() {
        let r = parse_fault_spec("503,op=GetObject,every=3,times=2").unwrap();
        assert_eq!(r.fault, Fault::slow_down());
        assert_eq!(r.when.op, Some(Op::GetObject));
        assert_eq!(r.when.every_nth, Some(3));
        assert_eq!(r.times, Some(2));

        let r = parse_fault_spec("stall=1.5,key=a/b.bin,range_start=8388608").unwrap();
        assert_eq!(r.fault, Fault::Stall(Duration::from_millis(1500)));
        assert_eq!(r.when.key.as_deref(), Some("a/b.bin"));
        assert_eq!(r.when.range_start, Some(8_388_608));
        assert_eq!(r.times, None);

        let r = parse_fault_spec("trickle=1000,op=uploadpart,part=3,p=0.25").unwrap();
        assert_eq!(r.fault, Fault::Trickle { bytes_per_sec: 1000 });
        assert_eq!(r.when.op, Some(Op::UploadPart));
        assert_eq!(r.when.part_number, Some(3));
        assert_eq!(r.when.probability, Some(0.25));

        let kinds = [
            ("500", Fault::internal_error()),
            ("request-timeout", Fault::request_timeout()),
            ("403", Fault::expired_token()),
            ("404", Fault::not_found()),
            ("reset", Fault::ResetBeforeHead),
            ("reset-mid", Fault::ResetMidBody),
            ("reset-after", Fault::ResetAfterAct),
            ("short", Fault::ShortBody),
            ("flip", Fault::FlipByte),
            ("wrong-etag", Fault::WrongEtag),
        ];
        for (k, f) in kinds {
            assert_eq!(parse_fault_spec(k).unwrap().fault, f, "{k}");
        }
    }

    #[test]
    fn rejects_bad_specs() {
        for bad in [
            "",
            "418",
            "stall",
            "stall=-1",
            "trickle=0",
            "503=1",
            "503,op=Nope",
            "503,every=0",
            "503,p=2",
            "503,times=x",
            "503,bogus=1",
            "503,key",
            "503,part=99999999999",
        ] {
            assert!(parse_fault_spec(bad).is_err(), "{bad:?} should fail");
        }
    }
}
