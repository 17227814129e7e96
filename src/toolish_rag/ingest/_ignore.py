"""What a folder walk leaves out on purpose: the caller's ``exclude`` globs and the tree's ``.gitignore`` files.

Both use git's own pattern rules through ``pathspec`` (``GitIgnoreSpec``), which follows git's
documented edge cases (negation, ``dir/`` patterns, anchoring, ``**``) better than a hand-written
matcher would. See docs/ingestion.md#what-is-read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = ['IgnoreRules', 'exclude_spec']

GITIGNORE = '.gitignore'


def exclude_spec(patterns: Sequence[str]) -> GitIgnoreSpec | None:
    """The caller's ``exclude`` globs as one spec (``None`` when there are none); a bad pattern raises ``ValueError``."""
    if not patterns:
        return None
    try:
        return GitIgnoreSpec.from_lines(list(patterns))
    except Exception as exc:  # pathspec raises its own GitWildMatchPatternError (a ValueError) or others
        raise ValueError(f'invalid exclude pattern: {exc}') from None


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The rules in force in one folder of a walk under ``root``.

    ``layers`` are the ``.gitignore`` files met on the way (each with its folder), outermost
    first: as in git, the deepest file that has a matching pattern decides, and within one
    file the last matching pattern. ``exclude`` patterns are matched against the path under
    ``root`` and win over everything (a ``.gitignore`` ``!`` pattern cannot bring one back).
    """

    root: Path
    exclude: GitIgnoreSpec | None = None
    layers: tuple[tuple[Path, GitIgnoreSpec], ...] = ()
    gitignore: bool = True

    @classmethod
    def at_root(cls, root: Path, exclude: GitIgnoreSpec | None, gitignore: bool) -> IgnoreRules:
        """The rules at the top of a walk: the ``.gitignore`` files from the enclosing git work tree's top down."""
        rules = cls(root, exclude, (), gitignore)
        if not gitignore:
            return rules
        for folder in _enclosing_repo_folders(root):
            rules = rules.entering(folder)
        return rules

    def entering(self, folder: Path) -> IgnoreRules:
        """The rules inside ``folder``: these plus its own ``.gitignore``, if it has a readable one."""
        if not self.gitignore:
            return self
        try:
            lines = (folder / GITIGNORE).read_text(encoding='utf-8', errors='replace').splitlines()
        except OSError:  # none (the usual case), or unreadable: nothing to add
            return self
        try:
            spec = GitIgnoreSpec.from_lines(lines)
        except Exception:  # a line git would also ignore as malformed: the file is skipped, the walk goes on
            return self
        return replace(self, layers=(*self.layers, (folder, spec)))

    def ignores(self, path: Path, is_dir: bool) -> bool:
        """Whether the walk leaves ``path`` (an entry of the folder these rules are for) out."""
        slash = '/' if is_dir else ''
        if self.exclude is not None and self.exclude.match_file(_relative(path, self.root) + slash):
            return True
        for folder, spec in reversed(self.layers):
            decided = spec.check_file(_relative(path, folder) + slash).include
            if decided is not None:
                return decided
        return False


def _relative(path: Path, folder: Path) -> str:
    if path == folder:
        return path.name
    return path.relative_to(folder).as_posix()


def _enclosing_repo_folders(root: Path) -> list[Path]:
    """``root`` and, when it lies inside a git work tree, its ancestors up to that tree's top (outermost first)."""
    chain = [root]
    while not (chain[-1] / '.git').exists():
        if chain[-1].parent == chain[-1]:
            return [root]  # not in a git work tree: only the walked folder's own files apply
        chain.append(chain[-1].parent)
    return list(reversed(chain))
