# Generated from codegen/generate.py by `python codegen/generate.py`; do not edit by hand.
"""The base class of the generated models."""

from pydantic import BaseModel, ConfigDict


class JsonModel(BaseModel):
    """A model that writes the schema's field names by default (`from`, not `from_`).

    A field whose JSON name is not a Python identifier gets an alias; without this a
    plain `model_dump_json()` would write the Python name and not round-trip.
    """

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True)
