"""Kubernetes manifests checked against the Kubernetes API's own schema, as
Debian ships it: the models python3-kubernetes generates from the API's
OpenAPI spec. Every field must be one the API has (no typo is silently
dropped by the API server), of its type (a string where a string goes, a
list where a list goes), and every required field present (the models
refuse to be built without one). Kustomization files are kustomize's, not
the API's: their resources must exist."""

import datetime
import re

import kubernetes.client as k8s
from kubernetes.client import ApiClient


def model_name(doc):
    group_version = doc.get("apiVersion", "")
    version = group_version.split("/")[-1]
    return version[:1].upper() + version[1:] + doc.get("kind", "")


def _check(value, type_name, path, errors):
    if value is None:
        return
    if type_name == "object":
        return
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: must be a list, not {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _check(item, type_name[5:-1], f"{path}[{i}]", errors)
        return
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: must be a map, not {type(value).__name__}")
            return
        inner = re.match(r"dict\(str, (.*)\)$", type_name).group(1)
        for key, item in value.items():
            _check(item, inner, f"{path}.{key}", errors)
        return
    scalars = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": (str, datetime.datetime),
               "date": (str, datetime.date)}
    if type_name in scalars:
        wanted = scalars[type_name]
        if not isinstance(value, wanted) or (type_name == "int" and isinstance(value, bool)):
            errors.append(f"{path}: must be {type_name}, not {type(value).__name__} ({value!r})")
        return
    cls = getattr(k8s, type_name, None)
    if cls is None:
        errors.append(f"{path}: no model {type_name} in the Kubernetes client")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: must be a {type_name} map, not {type(value).__name__}")
        return
    by_key = {key: attr for attr, key in cls.attribute_map.items()}
    for key, item in value.items():
        attr = by_key.get(key)
        if attr is None:
            errors.append(f"{path}.{key}: {type_name} has no field \"{key}\"")
            continue
        _check(item, cls.openapi_types[attr], f"{path}.{key}", errors)


def validate(doc):
    """The problems of one manifest, as "path: message" lines ([] when it is valid)."""
    name = model_name(doc)
    if not hasattr(k8s, name):
        return [f"{doc.get('apiVersion')} {doc.get('kind')}: not a kind this Kubernetes API has"]
    errors = []
    _check(doc, name, doc.get("kind", "?"), errors)
    if not errors:
        try:
            # Builds the typed objects: a required field missing raises here.
            ApiClient()._ApiClient__deserialize(doc, name)
        except (ValueError, TypeError) as e:
            errors.append(f"{doc.get('kind')}: {e}")
    return errors
