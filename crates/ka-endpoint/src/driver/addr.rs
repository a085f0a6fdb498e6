//! The stack's address and prefix ([`Cidr`]) and how the TUN device's kernel
//! side is addressed so that the kernel routes the prefix into the device
//! without ever answering for the stack's own address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::{Command, Stdio};
use std::str::FromStr;

/// An address with a prefix length, e.g. `10.0.0.1/24` or `fd00::1/64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    /// The address (the userspace stack's own address).
    pub addr: IpAddr,
    /// Prefix length (8–32 for IPv4, 16–128 for IPv6 when parsed).
    pub prefix_len: u8,
}

/// Why a [`Cidr`] could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// No `/` separating address and prefix length.
    #[error("expected ADDRESS/PREFIX, e.g. 10.0.0.1/24")]
    MissingPrefix,
    /// The address part is not an IP address.
    #[error("invalid IP address {0:?}")]
    Address(String),
    /// The prefix length is not a number or too large for the family.
    #[error("invalid prefix length {0:?}")]
    PrefixLen(String),
    /// The prefix is wider than [`MIN_PREFIX_V4`] / [`MIN_PREFIX_V6`]: the
    /// kernel would route that much of the address space into the device.
    #[error(
        "prefix /{len} is too wide: the kernel would route all of it into the device; use /{min} or longer"
    )]
    TooWide {
        /// The prefix length given.
        len: u8,
        /// The shortest prefix accepted for the family.
        min: u8,
    },
}

/// The shortest IPv4 prefix a [`Cidr`] accepts (a /8 is already 16 M
/// addresses routed into the device; a /0 would take the default route).
pub const MIN_PREFIX_V4: u8 = 8;
/// The shortest IPv6 prefix a [`Cidr`] accepts.
pub const MIN_PREFIX_V6: u8 = 16;

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, p) = s.trim().split_once('/').ok_or(CidrError::MissingPrefix)?;
        let addr: IpAddr = a.parse().map_err(|_| CidrError::Address(a.to_owned()))?;
        let prefix_len: u8 = p.parse().map_err(|_| CidrError::PrefixLen(p.to_owned()))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix_len > max {
            return Err(CidrError::PrefixLen(p.to_owned()));
        }
        let min = if addr.is_ipv4() {
            MIN_PREFIX_V4
        } else {
            MIN_PREFIX_V6
        };
        if prefix_len < min {
            return Err(CidrError::TooWide {
                len: prefix_len,
                min,
            });
        }
        Ok(Cidr { addr, prefix_len })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

impl Cidr {
    /// The address the TUN device's **kernel** side gets by default: the
    /// highest host address of the prefix (`.254` in a /24; for IPv6 the
    /// all-ones host part), or the lowest (`.1`) if that is the stack's own
    /// address. `None` if the prefix has no room for two hosts (IPv4 /31,
    /// /32, IPv6 /127, /128).
    ///
    /// The kernel then owns that address and routes the whole prefix into
    /// the device, while the stack's own address stays unconfigured on the
    /// kernel side — otherwise the kernel would answer (with RST) for it.
    pub fn kernel_side(&self) -> Option<IpAddr> {
        match self.addr {
            IpAddr::V4(a) => {
                if self.prefix_len > 30 {
                    return None;
                }
                let host_bits = 32 - u32::from(self.prefix_len);
                let mask = u32::MAX.checked_shl(host_bits).unwrap_or(0);
                let net = u32::from(a) & mask;
                let high = (net | !mask) - 1;
                let pick = if high == u32::from(a) { net + 1 } else { high };
                Some(IpAddr::V4(Ipv4Addr::from(pick)))
            }
            IpAddr::V6(a) => {
                if self.prefix_len > 126 {
                    return None;
                }
                let host_bits = 128 - u32::from(self.prefix_len);
                let mask = u128::MAX.checked_shl(host_bits).unwrap_or(0);
                let net = u128::from(a) & mask;
                let high = net | !mask;
                let pick = if high == u128::from(a) { net + 1 } else { high };
                Some(IpAddr::V6(Ipv6Addr::from(pick)))
            }
        }
    }

    /// Whether `ip` lies in this prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u32::from(a) & mask == u32::from(b) & mask
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u128::from(a) & mask == u128::from(b) & mask
            }
            _ => false,
        }
    }
}

/// Gives the kernel side of device `dev` the address `kernel` with the
/// prefix length of `cidr` (`ip addr replace`, idempotent), so the kernel
/// routes `cidr`'s prefix into the device. Needs iproute2 and
/// `CAP_NET_ADMIN`; runs in the caller's network namespace.
pub fn configure_kernel_side(dev: &str, cidr: Cidr, kernel: IpAddr) -> std::io::Result<()> {
    let family = if kernel.is_ipv4() { "-4" } else { "-6" };
    let with_prefix = format!("{kernel}/{}", cidr.prefix_len);
    let mut cmd = Command::new("ip");
    cmd.args([family, "addr", "replace", &with_prefix, "dev", dev]);
    if kernel.is_ipv6() {
        // no duplicate-address detection: nothing else is on this link
        cmd.arg("nodad");
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| std::io::Error::new(e.kind(), format!("running `ip` (iproute2): {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "`ip {family} addr replace {with_prefix} dev {dev}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let c: Cidr = "10.0.0.1/24".parse().unwrap();
        assert_eq!(c.addr, IpAddr::from([10, 0, 0, 1]));
        assert_eq!(c.prefix_len, 24);
        assert_eq!(c.to_string(), "10.0.0.1/24");
        assert_eq!("10.0.0.1".parse::<Cidr>(), Err(CidrError::MissingPrefix));
        assert!(matches!(
            "10.0.0.1/33".parse::<Cidr>(),
            Err(CidrError::PrefixLen(_))
        ));
        assert!(matches!("x/3".parse::<Cidr>(), Err(CidrError::Address(_))));
        assert!("fd00::1/129".parse::<Cidr>().is_err());
        assert!("fd00::1/64".parse::<Cidr>().is_ok());
        // A /0 would install a default route into the device.
        assert_eq!(
            "10.9.0.1/0".parse::<Cidr>(),
            Err(CidrError::TooWide { len: 0, min: 8 })
        );
        assert!("10.9.0.1/8".parse::<Cidr>().is_ok());
        assert_eq!(
            "fd00::1/15".parse::<Cidr>(),
            Err(CidrError::TooWide { len: 15, min: 16 })
        );
    }

    #[test]
    fn kernel_side_never_takes_ours() {
        let k = |s: &str| s.parse::<Cidr>().unwrap().kernel_side();
        assert_eq!(k("10.0.0.1/24"), Some(IpAddr::from([10, 0, 0, 254])));
        assert_eq!(k("10.0.0.254/24"), Some(IpAddr::from([10, 0, 0, 1])));
        assert_eq!(k("10.0.0.5/30"), Some(IpAddr::from([10, 0, 0, 6])));
        assert_eq!(k("10.0.0.6/30"), Some(IpAddr::from([10, 0, 0, 5])));
        assert_eq!(k("10.0.0.1/31"), None);
        let wide = Cidr {
            addr: IpAddr::from([10, 0, 0, 1]),
            prefix_len: 0,
        };
        assert_eq!(wide.kernel_side(), Some(IpAddr::from([255, 255, 255, 254])));
        assert_eq!(
            k("fd00::1/64"),
            Some("fd00::ffff:ffff:ffff:ffff".parse().unwrap())
        );
        assert_eq!(k("fd00::1/127"), None);
    }

    #[test]
    fn contains() {
        let c: Cidr = "10.1.2.3/16".parse().unwrap();
        assert!(c.contains(IpAddr::from([10, 1, 200, 1])));
        assert!(!c.contains(IpAddr::from([10, 2, 0, 1])));
        assert!(!c.contains("fd00::1".parse().unwrap()));
        let all = Cidr {
            addr: IpAddr::from([0, 0, 0, 0]),
            prefix_len: 0,
        };
        assert!(all.contains(IpAddr::from([1, 2, 3, 4])));
    }
}
