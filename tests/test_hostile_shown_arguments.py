"""The arguments an approval shows are the ones a person edits: sent back as the edit (after
changing nothing, or one field), they are accepted and the tool gets what was shown. The input
read back by its aliases is shown when it reads back as the same input; otherwise (a field with
only a validation alias, a computed field, a secret the dump would mask) what the model sent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    computed_field,
)
from test_hostile_edits import waiting_for_approval


class ByValidationAlias(BaseModel):
    order_id: str = Field(validation_alias=AliasChoices("orderId", "order"))
    amount: int = 1


class WithComputed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def doubled(self) -> int:
        return 2 * self.amount


class WithSecret(BaseModel):
    user: str
    password: SecretStr


CASES = [
    (ByValidationAlias, {"orderId": "A1", "amount": 5}),
    (WithComputed, {"amount": 5}),
    (WithSecret, {"user": "ann", "password": "s3cret"}),
]


@pytest.mark.parametrize(("model", "sent"), CASES, ids=[m.__name__ for m, _ in CASES])
@pytest.mark.parametrize("front", ["run", "store"])
async def test_the_shown_arguments_sent_back_unchanged_run_the_call_as_sent(
    store_path: Path, front: str, model: type[BaseModel], sent: dict[str, Any]
):
    run, store, approval, got, _ = await waiting_for_approval(store_path, model, sent)
    edit = dict(approval.args)  # the edit form, opened and approved as it is
    if front == "run":
        run.interactions.decide(approval.id, approved=True, args=edit)
    else:
        store.approve(run.run_id, approval.id, args=edit)
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert got == [model.model_validate(sent)]
