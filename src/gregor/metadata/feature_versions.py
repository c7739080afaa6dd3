"""metadata.version levels by release name, the levels a `--release-version` stands for, and the
rule every finalized level must keep (Kafka 4's `Feature.validateVersion`).

The tools (`gregor features`, `gregor storage format`) and the controller share these, so a level
refused at format time is refused by UpdateFeatures for the same reason and in the same words.
"""

from __future__ import annotations

from typing import Mapping

from gregor.metadata.features import METADATA_VERSION, SUPPORTED_FEATURES, Feature, bootstrap_levels

#: Kafka's MetadataVersion names; level = position + 1 (1 = 3.0-IV1 ... 21 = 3.9-IV0).
METADATA_VERSION_NAMES: tuple[str, ...] = (
    "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1",
    "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0",
    "3.9-IV0",
)
#: Kafka 4's MetadataVersion.MINIMUM_VERSION (3.3-IV3): every other feature's level 1 and above needs at least it.
MINIMUM_FEATURE_METADATA_VERSION = 7
LATEST_METADATA_VERSION = len(METADATA_VERSION_NAMES)


def metadata_version_name(level: int) -> str:
    """The release name of a metadata.version level ("UNKNOWN n" as Kafka's tool prints one it does not know)."""
    return METADATA_VERSION_NAMES[level - 1] if 1 <= level <= LATEST_METADATA_VERSION else f"UNKNOWN {level}"


def metadata_version_level(release: str) -> int:
    """The metadata.version level of a release version: "3.7-IV2", or "3.7" for the last of its release
    (as Kafka's MetadataVersion.fromVersionString). ValueError names the supported ones."""
    text = release.strip()
    if text in METADATA_VERSION_NAMES:
        return METADATA_VERSION_NAMES.index(text) + 1
    matches = [index for index, name in enumerate(METADATA_VERSION_NAMES) if name.split("-")[0] == text]
    if matches:
        return matches[-1] + 1
    raise ValueError(f"Unknown release version '{release}'. Supported versions are: "
                     f"{METADATA_VERSION_NAMES[0]} to {METADATA_VERSION_NAMES[-1]}")


def release_levels(metadata_version: int) -> dict[str, int]:
    """The finalized levels a cluster of this release starts with. Gregor's other features came with
    its 3.9 records, so a release before 3.9-IV0 starts with them off (Kafka decides per feature,
    from the metadata version each came with: group.version 1 from 4.0-IV0, beyond Gregor's range)."""
    if metadata_version >= LATEST_METADATA_VERSION:
        return bootstrap_levels(metadata_version)
    return {METADATA_VERSION: metadata_version}


def feature(name: str) -> Feature | None:
    for candidate in SUPPORTED_FEATURES:
        if candidate.name == name:
            return candidate
    return None


def dependencies(name: str, level: int) -> dict[str, int]:
    """What finalizing `name` at `level` requires of the other features (empty: nothing)."""
    if name == METADATA_VERSION or level < 1:
        return {}
    return {METADATA_VERSION: MINIMUM_FEATURE_METADATA_VERSION}


def dependency_error(name: str, level: int, proposed: Mapping[str, int]) -> str | None:
    """Why `name`=`level` cannot be finalized beside the `proposed` levels (Kafka's wording), or None."""
    for needed, needed_level in dependencies(name, level).items():
        if proposed.get(needed, 0) < needed_level:
            shown = f"{needed}={needed_level} ({metadata_version_name(needed_level)})" \
                if needed == METADATA_VERSION else f"{needed} level {needed_level}"
            return f"{name} could not be set to {level} because it depends on {shown}"
    return None


def supported_range_error(name: str, level: int) -> str | None:
    """Why this build cannot finalize `name`=`level`, or None. Level 0 (off) of a feature it knows
    is always possible, except for metadata.version, which is never off."""
    known = feature(name)
    if known is None:
        return "this feature is not supported"
    if level == 0 and name != METADATA_VERSION:
        return None
    if not known.min_level <= level <= known.max_level:
        return f"supported versions are {known.min_level} to {known.max_level}"
    return None
