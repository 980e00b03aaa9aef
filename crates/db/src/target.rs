//! Which PostgreSQL server to load: a connection string (a URL or libpq's
//! `key=value` form), with what it leaves out taken from libpq's
//! environment (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`)
//! and then libpq's defaults, so that dyno reaches the server psql and
//! pgbench would reach from the same shell.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, NoTls};

use crate::wire::{self, Endpoint, Wire, WireError};

/// Where libpq looks for the server's socket on Debian when nothing says.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
const DEFAULT_PORT: u16 = 5432;
/// An unreachable host fails after this, not after the kernel's minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A server and the role and database to use on it.
#[derive(Clone)]
pub struct Target {
    config: Config,
}

/// Why a connection could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(
        "the connection string is not valid: {0}; give a URL such as postgres://user@host:5432/db, or key=value pairs such as 'host=/var/run/postgresql dbname=bench'"
    )]
    Invalid(String),
    /// Something libpq would honour that dyno cannot.
    #[error("{0}")]
    Unsupported(String),
    #[error("could not connect to PostgreSQL at {target}: {why}")]
    Connect { target: String, why: String },
}

impl Target {
    /// `conninfo` (empty: none) completed from `env` (libpq's variables,
    /// read by name) and libpq's defaults.
    pub fn new(
        conninfo: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Target, TargetError> {
        let conninfo = conninfo.trim();
        let mut config = if conninfo.is_empty() {
            Config::new()
        } else if !conninfo.contains(['=', ':', '/', ' ']) {
            // A bare word is a database name, as pgbench's DBNAME is.
            let mut config = Config::new();
            config.dbname(conninfo);
            config
        } else {
            Config::from_str(conninfo).map_err(|e| TargetError::Invalid(e.to_string()))?
        };
        if config.get_hosts().is_empty() {
            let hosts = env("PGHOST").unwrap_or_else(|| DEFAULT_SOCKET_DIR.into());
            for host in hosts.split(',') {
                if host.starts_with('/') {
                    config.host_path(host);
                } else {
                    config.host(host);
                }
            }
        }
        if config.get_ports().is_empty() {
            let port = match env("PGPORT") {
                Some(p) => p.parse().map_err(|_| {
                    TargetError::Invalid(format!("PGPORT is '{p}', not a port number"))
                })?,
                None => DEFAULT_PORT,
            };
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".into());
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let db =
                env("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").to_owned());
            config.dbname(&db);
        }
        if config.get_password().is_none()
            && let Some(password) = env("PGPASSWORD")
        {
            config.password(password);
        }
        refuse_unsupported(&env)?;
        if config.get_options().is_none() {
            // libpq sends PGDATESTYLE, PGTZ and PGGEQO as settings of the
            // session; dyno sends them with PGOPTIONS's.
            let mut options: Vec<String> = env("PGOPTIONS")
                .filter(|o| !o.trim().is_empty())
                .into_iter()
                .collect();
            for (var, setting) in [
                ("PGDATESTYLE", "datestyle"),
                ("PGTZ", "timezone"),
                ("PGGEQO", "geqo"),
            ] {
                if let Some(v) = env(var).filter(|v| !v.is_empty()) {
                    options.push(format!("-c {setting}={}", v.replace(' ', "\\ ")));
                }
            }
            if !options.is_empty() {
                config.options(options.join(" "));
            }
        }
        if config.get_connect_timeout().is_none() {
            let timeout = match env("PGCONNECT_TIMEOUT").filter(|v| !v.trim().is_empty()) {
                Some(v) => match v.trim().parse::<i64>() {
                    // libpq: 0 or less waits for ever, and 1 is taken as 2.
                    Ok(s) if s <= 0 => Duration::from_secs(3600 * 24 * 365),
                    Ok(s) => Duration::from_secs(s.max(2) as u64),
                    Err(_) => {
                        return Err(TargetError::Invalid(format!(
                            "PGCONNECT_TIMEOUT is '{v}', not a number of seconds"
                        )));
                    }
                },
                None => CONNECT_TIMEOUT,
            };
            config.connect_timeout(timeout);
        }
        if config.get_application_name().is_none() {
            let name = env("PGAPPNAME").unwrap_or_else(|| "dyno".into());
            config.application_name(&name);
        }
        if matches!(config.get_ssl_mode(), SslMode::Require) {
            return Err(TargetError::Unsupported(
                "sslmode=require in the connection string: dyno db connects without TLS; use a server that accepts a connection without it (sslmode=disable or prefer)".into(),
            ));
        }
        Ok(Target { config })
    }

    /// From the process's environment.
    pub fn from_env(conninfo: &str) -> Result<Target, TargetError> {
        Target::new(conninfo, |name| std::env::var(name).ok())
    }

    /// Opens a connection and drives it on the current tokio runtime.
    pub async fn connect(&self) -> Result<Client, TargetError> {
        let (client, connection) =
            self.config
                .connect(NoTls)
                .await
                .map_err(|e| TargetError::Connect {
                    target: self.to_string(),
                    why: connect_hint(&e),
                })?;
        tokio::spawn(async move {
            // Its end (the server went away) shows as the client's next
            // error, where it is reported.
            let _ = connection.await;
        });
        Ok(client)
    }
}

impl Target {
    /// Opens the load loop's own kind of connection ([`Wire`]) to the
    /// first of the hosts that answers, as libpq tries them in turn.
    pub async fn connect_wire(&self) -> Result<Wire, TargetError> {
        let config = &self.config;
        let ports = config.get_ports();
        let mut last = None;
        for (i, host) in config.get_hosts().iter().enumerate() {
            let port = ports
                .get(i)
                .or(ports.first())
                .copied()
                .unwrap_or(DEFAULT_PORT);
            let endpoint = Endpoint {
                host: match host {
                    Host::Tcp(name) => wire::Host::Tcp(name),
                    Host::Unix(dir) => wire::Host::Unix(dir),
                },
                port,
                user: config.get_user().unwrap_or(""),
                password: config.get_password(),
                database: config.get_dbname().unwrap_or(""),
                application_name: config.get_application_name(),
                options: config.get_options(),
                timeout: config
                    .get_connect_timeout()
                    .copied()
                    .unwrap_or(CONNECT_TIMEOUT),
            };
            match Wire::connect(&endpoint).await {
                Ok(wire) => return Ok(wire),
                // The server answered and said no: another host would not
                // know better.
                Err(e @ WireError::Server { .. }) => {
                    last = Some(e);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let why = match last {
            Some(e) => wire_hint(&e),
            None => "no host to connect to".to_owned(),
        };
        Err(TargetError::Connect {
            target: self.to_string(),
            why,
        })
    }
}

/// libpq's environment variables that dyno cannot honour, refused by name
/// when set rather than ignored: each changes where or how libpq connects.
fn refuse_unsupported(env: &impl Fn(&str) -> Option<String>) -> Result<(), TargetError> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let refuse = |name: &str, value: &str, why: &str| {
        Err(TargetError::Unsupported(format!(
            "{name} is set ('{value}'), and dyno db cannot honour it as libpq would: {why}; unset it (`unset {name}`) and give the same in the connection string, or use pgbench"
        )))
    };
    for name in ["PGSERVICE", "PGSERVICEFILE"] {
        if let Some(v) = set(name) {
            return refuse(
                name,
                &v,
                "dyno reads no connection service file (pg_service.conf); put the service's host, port, dbname and user in the connection string",
            );
        }
    }
    if let Some(v) = set("PGSSLMODE") {
        match v.trim() {
            // Without TLS, as the server allows.
            "disable" | "allow" | "prefer" => {}
            _ => {
                return refuse(
                    "PGSSLMODE",
                    &v,
                    "dyno db connects without TLS (sslmode disable, allow or prefer work)",
                );
            }
        }
    }
    if let Some(v) = set("PGREQUIRESSL").filter(|v| v.trim() == "1") {
        return refuse("PGREQUIRESSL", &v, "dyno db connects without TLS");
    }
    if let Some(v) = set("PGGSSENCMODE").filter(|v| v.trim() == "require") {
        return refuse("PGGSSENCMODE", &v, "dyno db has no GSSAPI encryption");
    }
    if let Some(v) = set("PGHOSTADDR") {
        return refuse(
            "PGHOSTADDR",
            &v,
            "dyno resolves the host name itself; give the address as the host (PGHOST or host=)",
        );
    }
    if let Some(v) = set("PGPASSFILE") {
        return refuse(
            "PGPASSFILE",
            &v,
            "dyno reads no password file; give the password in PGPASSWORD or the connection string",
        );
    }
    if let Some(v) = set("PGTARGETSESSIONATTRS").filter(|v| v.trim() != "any") {
        return refuse(
            "PGTARGETSESSIONATTRS",
            &v,
            "dyno connects to the first host that answers, whatever its role",
        );
    }
    if let Some(v) = set("PGCLIENTENCODING").filter(|v| {
        !matches!(
            v.trim().to_ascii_uppercase().as_str(),
            "UTF8" | "UTF-8" | "AUTO"
        )
    }) {
        return refuse("PGCLIENTENCODING", &v, "dyno's connections speak UTF8 only");
    }
    Ok(())
}

/// Shown without the password.
impl Target {
    /// The same server, role and database, the session named `name`
    /// (`application_name`) in `pg_stat_activity`.
    pub fn named(&self, name: &str) -> Target {
        let mut config = self.config.clone();
        config.application_name(name);
        Target { config }
    }

    /// The name its load's sessions go by (`application_name`).
    pub fn application_name(&self) -> Option<&str> {
        self.config.get_application_name()
    }

    /// A runtime of one thread to drive a connection to it from plain
    /// code (`inspect`, `--pg-stats`).
    pub fn runtime(&self) -> Result<tokio::runtime::Runtime, TargetError> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TargetError::Connect {
                target: self.to_string(),
                why: format!("could not start a runtime: {e}"),
            })
    }

    /// The port the server listens on (its Unix socket's number too):
    /// the first given, else libpq's default, 5432.
    pub fn port(&self) -> u16 {
        self.config.get_ports().first().copied().unwrap_or(5432)
    }

    /// The server and database as a URL without the role
    /// (`postgresql://127.0.0.1:5432/bench`), as watched figures are
    /// labelled with it.
    pub fn url(&self) -> String {
        let shown = self.to_string();
        let place = shown.split_once('@').map_or(shown.as_str(), |(_, p)| p);
        format!("postgresql://{place}")
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => socket_name(path),
            })
            .collect();
        let port = self
            .config
            .get_ports()
            .first()
            .copied()
            .unwrap_or(DEFAULT_PORT);
        write!(
            f,
            "{}@{}:{port}/{}",
            self.config.get_user().unwrap_or(""),
            hosts.join(","),
            self.config.get_dbname().unwrap_or("")
        )
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({self})")
    }
}

fn socket_name(dir: &Path) -> String {
    format!("[socket in {}]", dir.display())
}

/// The server's own words when it said no, else the client's, with what to
/// check.
fn connect_hint(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let hint = match db.code().code() {
            "28P01" | "28000" => {
                "; check the user and the password (PGUSER, PGPASSWORD or the connection string)"
            }
            "3D000" => "; create the database first (createdb), or name another one",
            _ => "",
        };
        return format!("{}{hint}", db.message());
    }
    let text = std::error::Error::source(e).map_or_else(|| e.to_string(), |s| s.to_string());
    format!(
        "{text}; is the server running and accepting connections there? Set PGHOST and PGPORT, or give a connection string"
    )
}

/// [`connect_hint`] for the load loop's connections.
fn wire_hint(e: &WireError) -> String {
    match e.code() {
        Some("28P01" | "28000") => format!(
            "{e}; check the user and the password (PGUSER, PGPASSWORD or the connection string)"
        ),
        Some("3D000") => format!("{e}; create the database first (createdb), or name another one"),
        Some(_) => e.to_string(),
        None => format!(
            "{e}; is the server running and accepting connections there? Set PGHOST and PGPORT, or give a connection string"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_fills_what_the_string_leaves_out_as_libpq_does() {
        let vars = [
            ("PGHOST", "/tmp/sock"),
            ("PGPORT", "6000"),
            ("PGUSER", "bench"),
            ("PGPASSWORD", "secret"),
        ];
        let t = Target::new("", env(&vars)).unwrap();
        assert_eq!(t.to_string(), "bench@[socket in /tmp/sock]:6000/bench");
        assert_eq!(t.config.get_password(), Some(&b"secret"[..]));
        let t = Target::new("postgres://other@db.example:5433/shop", env(&vars)).unwrap();
        assert_eq!(t.to_string(), "other@db.example:5433/shop");
        let t = Target::new("dbname=x", env(&[])).unwrap();
        assert_eq!(t.config.get_ports(), [5432]);
        assert!(
            t.to_string().contains("[socket in /var/run/postgresql]"),
            "{t}"
        );
    }

    #[test]
    fn a_bare_word_is_a_database_name_as_for_pgbench() {
        let t = Target::new("bench", env(&[("PGHOST", "/tmp/sock"), ("PGUSER", "me")])).unwrap();
        assert_eq!(t.to_string(), "me@[socket in /tmp/sock]:5432/bench");
    }

    #[test]
    fn bad_strings_and_ports_say_what_to_give() {
        let e = Target::new("postgres://h:notaport/db", env(&[])).unwrap_err();
        assert!(e.to_string().contains("postgres://user@host"), "{e}");
        let e = Target::new("", env(&[("PGPORT", "x")])).unwrap_err();
        assert!(e.to_string().contains("PGPORT is 'x'"), "{e}");
    }

    #[test]
    fn pgoptions_and_libpqs_other_variables_are_honoured_when_the_string_leaves_them_out() {
        let vars = [
            ("PGOPTIONS", "-c default_transaction_isolation=serializable"),
            ("PGTZ", "UTC"),
            ("PGAPPNAME", "mine"),
            ("PGCONNECT_TIMEOUT", "1"),
            ("PGSSLMODE", "prefer"),
        ];
        let t = Target::new("", env(&vars)).unwrap();
        assert_eq!(
            t.config.get_options(),
            Some("-c default_transaction_isolation=serializable -c timezone=UTC")
        );
        assert_eq!(t.config.get_application_name(), Some("mine"));
        // libpq takes 1 as 2.
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&Duration::from_secs(2))
        );
        // The string wins over the environment, as in libpq.
        let t = Target::new("options='-c work_mem=64MB' application_name=x", env(&vars)).unwrap();
        assert_eq!(t.config.get_options(), Some("-c work_mem=64MB"));
        assert_eq!(t.config.get_application_name(), Some("x"));
        let e = Target::new("", env(&[("PGCONNECT_TIMEOUT", "soon")])).unwrap_err();
        assert!(e.to_string().contains("PGCONNECT_TIMEOUT is 'soon'"), "{e}");
    }

    #[test]
    fn libpq_variables_dyno_cannot_honour_are_refused_by_name() {
        for (name, value) in [
            ("PGSERVICE", "bench"),
            ("PGSERVICEFILE", "/etc/pg_service.conf"),
            ("PGSSLMODE", "require"),
            ("PGSSLMODE", "verify-full"),
            ("PGPASSFILE", "/home/me/.pgpass"),
            ("PGHOSTADDR", "10.0.0.1"),
            ("PGTARGETSESSIONATTRS", "read-write"),
            ("PGCLIENTENCODING", "LATIN1"),
        ] {
            let e = Target::new("", env(&[(name, value)]))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{name} is set ('{value}')")), "{e}");
            assert!(e.contains(&format!("unset {name}")), "{e}");
        }
        let e = Target::new("sslmode=require", env(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("without TLS"), "{e}");
        Target::new(
            "",
            env(&[("PGSSLMODE", "disable"), ("PGCLIENTENCODING", "UTF8")]),
        )
        .unwrap();
    }
}
