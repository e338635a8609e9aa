"""HF Trainer on a 1-layer GPT-2 built from a config, random tokens: log_history is the record."""

import torch
from record import save
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2))
data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (160, 16))]
args = TrainingArguments(
    output_dir="hf_out",
    max_steps=40,
    per_device_train_batch_size=8,
    logging_steps=2,
    report_to=[],
    save_strategy="no",
    use_cpu=True,
    learning_rate=1e-3,
)
trainer = Trainer(model=model, args=args, train_dataset=data)
trainer.train()
save("step", [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h])
