"""The config: one YAML file (and `RANKMON_SECTION__KEY` overrides) read once into `Config`.

Enters: the file and the environment. Leaves: a frozen `Config` of typed values, every
default filled in, or one `ConfigError` naming the key; `render` writes it back for
`rankmon check-config`, secrets masked.
"""

from __future__ import annotations

from monitor.config.loader import Config, load_config

__all__ = ["Config", "load_config"]
