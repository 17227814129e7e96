"""The code builder's static resolution: names and attribute chains to stored definitions, and call sites.

Calls are resolved statically or dropped, never guessed. See docs/graph.md (Code graph).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ._symbols import (
    OPAQUE,
    AnnotatedAttr,
    Binder,
    Binding,
    Bindings,
    ClassInfo,
    Def,
    Definition,
    From,
    Instance,
    Mod,
    Module,
    Opaque,
)

__all__ = ['Resolver', 'calls_of', 'prefixes']


@dataclass(slots=True)
class _Scope:
    """A function, lambda, comprehension or class scope on the way from a call site out to the module."""

    bindings: Bindings
    declared_global: set[str]
    kind: Literal['function', 'class', 'comprehension']
    method_of: str | None = None
    """For a method's own scope: its class (zero-argument ``super()`` works there)."""
    declared_nonlocal: set[str] = field(default_factory=set)


class Resolver:
    """Resolves names and attribute chains among the stored modules of one scope group.

    Every module whose table it consults (or whose absence it relies on) is recorded in
    ``consulted``, with its digest or ``None``: the fingerprint of the module being resolved.
    """

    def __init__(self, modules: Mapping[str, Module]) -> None:
        self.modules = modules
        self.consulted: dict[str, str | None] = {}
        self._mro: dict[str, list[ClassInfo]] = {}

    def table(self, name: str) -> Module | None:
        module = self.modules.get(name)
        self.consulted[name] = module.digest if module is not None else None
        return module

    def final(
        self, bindings: set[Binding], seen: frozenset[tuple[str, str]] = frozenset()
    ) -> Def | Mod | Instance | None:
        """What a set of bindings of one name resolves to, if they all agree."""
        results = {self._follow(b, seen) for b in bindings}
        if len(results) != 1:
            return None
        return results.pop()

    def _follow(self, binding: Binding, seen: frozenset[tuple[str, str]]) -> Def | Mod | Instance | None:
        if isinstance(binding, From):
            return self.attribute_of_module(binding.module, binding.name, seen)
        if isinstance(binding, Opaque):
            return None
        if isinstance(binding, AnnotatedAttr):
            module = self.table(binding.module)
            if module is None:
                return None
            cls = self.class_of(ast.parse(binding.annotation, mode='eval').body, module)
            return Instance(cls) if cls is not None else None
        return binding

    def attribute_of_module(
        self, module_name: str, name: str, seen: frozenset[tuple[str, str]] = frozenset()
    ) -> Def | Mod | Instance | None:
        """``module.name``: the module's binding (followed through re-exports), else its submodule."""
        submodule = f'{module_name}.{name}'
        if (module_name, name) in seen:  # `from . import x` inside the package itself: the submodule
            return Mod(submodule) if self.table(submodule) is not None else None
        seen = seen | {(module_name, name)}
        module = self.table(module_name)
        if module is not None and name in module.bindings:
            return self.final(module.bindings[name], seen)
        if module is not None:
            for star in reversed(module.stars):
                starred = self.table(star)
                if starred is None:
                    break  # an unknown module might define it: do not guess past it
                if name in starred.bindings and not name.startswith('_'):
                    return self.final(starred.bindings[name], seen)
        return Mod(submodule) if self.table(submodule) is not None else None

    def mro(self, qualname: str) -> list[ClassInfo]:
        """The stored classes of ``qualname``'s MRO (C3; left-to-right depth-first if C3 fails)."""
        if qualname in self._mro:
            return self._mro[qualname]
        self._mro[qualname] = []  # a cyclic hierarchy (broken code) ends here
        cls = self._class(qualname)
        if cls is None:
            return []
        module = self.modules[cls.module]
        bases: list[list[ClassInfo]] = []
        for expression in cls.bases:
            base = self.class_of(expression, module)
            if base is not None:
                bases.append(self.mro(base))
        result = [cls, *_c3([*bases, [b[0] for b in bases if b]])]
        self._mro[qualname] = result
        return result

    def _class(self, qualname: str) -> ClassInfo | None:
        for module_name in prefixes(qualname):
            module = self.table(module_name)
            if module is not None and qualname in module.classes:
                return module.classes[qualname]
        return None

    def class_of(self, node: ast.expr, module: Module) -> str | None:
        """The stored class a base or an annotation names: ``C``, ``mod.C``, ``C[T]``, ``'C'``; else ``None``.

        A union (``C | None``, ``Optional[C]``) names no single class: ``None``.
        """
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode='eval').body
            except SyntaxError:
                return None
        if isinstance(node, ast.Subscript):
            node = node.value
        found = self.expression(node, module, [])
        return found.qualname if isinstance(found, Def) and found.kind == 'class' else None

    def member(self, classes: Sequence[ClassInfo], name: str) -> Def | Instance | None:
        """``name`` looked up along ``classes`` (an MRO): the first class binding it decides."""
        for cls in classes:
            if name in cls.members:
                found = self.final(cls.members[name])
                return found if isinstance(found, Def | Instance) else None
        return None

    def name(self, name: str, module: Module, chain: Sequence[_Scope]) -> Def | Mod | Instance | None:
        """A bare name at a point inside ``chain`` (innermost scope last): local, enclosing, then global."""
        for i in range(len(chain) - 1, -1, -1):
            scope = chain[i]
            if scope.kind == 'class' and i != len(chain) - 1:
                continue  # class bodies are not visible to the functions inside them
            if name in scope.declared_global:
                break
            if name in scope.declared_nonlocal:
                continue
            if name in scope.bindings:
                return self.final(scope.bindings[name])
        if name in module.bindings:
            return self.final(module.bindings[name])
        for star in reversed(module.stars):
            starred = self.table(star)
            if starred is None:
                return None
            if name in starred.bindings and not name.startswith('_'):
                return self.final(starred.bindings[name])
        return None

    def expression(self, node: ast.expr, module: Module, chain: Sequence[_Scope]) -> Def | Mod | Instance | None:
        """What a name or attribute chain refers to, or ``None``."""
        if isinstance(node, ast.Name):
            return self.name(node.id, module, chain)
        if not isinstance(node, ast.Attribute):
            return None
        if isinstance(node.value, ast.Call) and _is_super(node.value):
            return self._super_member(node.value, node.attr, module, chain)
        owner = self.expression(node.value, module, chain)
        if isinstance(owner, Mod):
            return self.attribute_of_module(owner.name, node.attr)
        if isinstance(owner, Instance):
            return self.member(self.mro(owner.cls), node.attr)
        if isinstance(owner, Def) and owner.kind == 'class':
            return self.member(self.mro(owner.qualname), node.attr)
        return None

    def _super_member(
        self, call: ast.Call, name: str, module: Module, chain: Sequence[_Scope]
    ) -> Def | Instance | None:
        method = next((s for s in reversed(chain) if s.kind != 'comprehension'), None)
        if method is None or method.method_of is None:
            return None
        if not call.args:
            return self.member(self.mro(method.method_of)[1:], name)
        if len(call.args) != 2:
            return None
        start = self.expression(call.args[0], module, chain)
        if not isinstance(start, Def) or start.kind != 'class':
            return None
        mro = self.mro(method.method_of)
        names = [c.qualname for c in mro]
        after = mro[names.index(start.qualname) + 1 :] if start.qualname in names else self.mro(start.qualname)[1:]
        return self.member(after, name)


def _is_super(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == 'super' and not call.keywords


def prefixes(qualname: str) -> Iterator[str]:
    """``a.b.C.D`` -> ``a.b.C``, ``a.b``, ``a``: where the module part of a qualified name may end."""
    parts = qualname.split('.')
    for end in range(len(parts) - 1, 0, -1):
        yield '.'.join(parts[:end])


def _c3(sequences: list[list[ClassInfo]]) -> list[ClassInfo]:
    """C3 linearisation of the bases' MROs; falls back to left-to-right, depth-first, deduplicated."""
    pending = [list(s) for s in sequences if s]
    result: list[ClassInfo] = []
    while pending:
        for seq in pending:
            head = seq[0]
            if not any(head in s[1:] for s in pending):
                break
        else:
            seen = {id(c) for c in result}
            for c in (c for s in sequences for c in s):
                if id(c) not in seen:
                    seen.add(id(c))
                    result.append(c)
            return result
        result.append(head)
        pending = [[c for c in s if c is not head] for s in pending]
        pending = [s for s in pending if s]
    return result


# -- calls -----------------------------------------------------------------------------------


def _function_scope(
    module: Module, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, method_of: str | None
) -> _Scope:
    """A function's local bindings: parameters (the first one of a method is ``self``/``cls``) and its body's."""
    binder = Binder(module, lambda _definition: OPAQUE)
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    for arg in [*positional, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            binder.bind(arg.arg, OPAQUE)
    if method_of is not None and positional and not _is_static(node):
        binder.bindings[positional[0].arg] = {Instance(method_of)}  # reassigned in the body: opaque joins, unknown
    if isinstance(node, ast.Lambda):
        binder.visit(node.body)
    else:
        binder.scan(node.body)
    return _Scope(binder.bindings, binder.declared_global, 'function', method_of, binder.declared_nonlocal)


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    if isinstance(node, ast.Lambda):
        return True
    return any(isinstance(d, ast.Name) and d.id == 'staticmethod' for d in node.decorator_list)


@dataclass(slots=True)
class _CallSites:
    """Resolved call sites of one function: target -> (count, offset of the first)."""

    targets: dict[Def, tuple[int, int]] = field(default_factory=dict)

    def add(self, target: Def, offset: int) -> None:
        count, first = self.targets.get(target, (0, offset))
        self.targets[target] = (count + 1, min(first, offset))


class _CallWalker(ast.NodeVisitor):
    """Walks one function body, resolving every call site with the scopes in force there."""

    def __init__(self, resolver: Resolver, module: Module, chain: list[_Scope], sites: _CallSites) -> None:
        self.resolver = resolver
        self.module = module
        self.chain = chain
        self.sites = sites

    def visit_Call(self, node: ast.Call) -> None:
        target = self.resolver.expression(node.func, self.module, self.chain)
        if isinstance(target, Def):
            self.sites.add(target, self.module.source.offset(node))
        self.generic_visit(node)

    def _nested_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expression in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expression is not None:
                self.visit(expression)
        self._inside(_function_scope(self.module, node, None), node.body)

    visit_FunctionDef = visit_AsyncFunctionDef = _nested_function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expression in [*node.args.defaults, *node.args.kw_defaults]:
            if expression is not None:
                self.visit(expression)
        self._inside(_function_scope(self.module, node, None), [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expression)
        binder = Binder(self.module, lambda _definition: OPAQUE).scan(node.body)
        self._inside(_Scope(binder.bindings, binder.declared_global, 'class'), node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        binder = Binder(self.module, lambda _definition: OPAQUE)
        for generator in node.generators:
            binder.visit(generator.target)
        parts: list[ast.AST] = [*node.generators]
        parts.extend([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        self._inside(_Scope(binder.bindings, set(), 'comprehension'), parts)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _inside(self, scope: _Scope, body: Sequence[ast.AST]) -> None:
        self.chain.append(scope)
        try:
            for item in body:
                self.visit(item)
        finally:
            self.chain.pop()


def calls_of(resolver: Resolver, module: Module, definition: Definition) -> _CallSites:
    """Every resolved call in the bodies of a function entity (all its overloads)."""
    sites = _CallSites()
    for node in definition.nodes:
        if isinstance(node, ast.ClassDef):
            continue
        scope = _function_scope(module, node, definition.method_of)
        walker = _CallWalker(resolver, module, [scope], sites)
        for statement in node.body:
            walker.visit(statement)
    return sites
