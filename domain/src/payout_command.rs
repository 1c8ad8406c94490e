//! The contract's transition table: what each command asks of a payout,
//! the states it may start from, the record after it, the follow-up of its
//! conversions and the event it records.

use crate::change::Event;
use crate::error::Error;
use crate::event::EventType;
use crate::payout::invoice::INVOICE_STATES;
use crate::payout::{Invoice, InvoiceUpload, Payout, PayoutStatus, PayoutWork};
use crate::payout_account::{PaymentError, Rail};
use chrono::{DateTime, NaiveDate, Utc};

/// What the merchant, the provider or the storage event asks of a payout.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// The invoice object landed (storage event): a PENDING payout's.
    AttachInvoice(InvoiceUpload),
    /// The affiliate sent an invoice through the portal: a PENDING payout's,
    /// or a new file for an INVOICE_UPLOADED one (a wrong file, or one
    /// missing from storage). Storage events never replace a file: one
    /// delivered late would bring an older file back.
    ReplaceInvoice(InvoiceUpload),
    /// `POST approve`; `checked_invoice`: the invoice's storage key, found in
    /// storage by the call (none when it was not there).
    Approve { checked_invoice: Option<String> },
    /// `POST mark-paid`: paid outside the platform on `payment_date`.
    MarkPaid {
        payment_date: NaiveDate,
        payment_method: String,
    },
    /// `PUT mark-paid`: settled outside the platform, from any open state.
    Settle {
        payment_reference: Option<String>,
        note: Option<String>,
    },
    /// `POST reject`.
    Reject { reason: String },
    /// `POST batch-process`: approve (when invoiced) and hand to the provider.
    /// `rail`: the provider it is sent to next, none when no provider of
    /// the merchant's is asked (manual, sandbox).
    Process {
        checked_invoice: Option<String>,
        rail: Option<Rail>,
    },
    /// The provider confirmed the payment.
    ConfirmPayment { reference: Option<String> },
    /// The provider refused or failed; the payout is approved again.
    PaymentFailed { code: String, message: String },
    /// The provider took the payment and will confirm it by an event
    /// (PayPal's batch id): it stays PROCESSING, never sent again.
    PaymentAccepted { reference: String },
    /// The provider could not deliver it yet (PayPal's UNCLAIMED): it stays
    /// PROCESSING with the reason noted.
    PaymentUnclaimed { code: String, message: String },
    /// `POST bulk-cancel`.
    Cancel { reason: String },
}

/// What a payout's conversions need after a transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowUp {
    Nothing,
    /// Paid side effects: its conversions become PAID, the affiliate's `paid` grows.
    PayConversions,
    /// Its conversions (and adjustments) return to the payable pool.
    ReleaseConversions,
}

/// A transition's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The payout changed from `from`.
    Changed {
        payout: Box<Payout>,
        from: PayoutStatus,
        follow_up: FollowUp,
        /// None for a change of no interest to a webhook (a provider's
        /// acknowledgement while the payout stays PROCESSING).
        event: Option<EventType>,
        /// The payout as approved in passing, when the command approved it
        /// on its way to another state (batch-process of an INVOICE_UPLOADED
        /// payout): its `payout.approved` comes before `event`.
        approval: Option<Box<Payout>>,
    },
    /// Nothing to do (PUT mark-paid, or a payment confirmation, on a PAID
    /// payout): 200 with the payout as it is.
    Unchanged,
}

/// A transition as one write: the payout as it becomes, the status it
/// leaves, and its events in the order they happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub payout: Payout,
    pub from: PayoutStatus,
    pub events: Vec<Event>,
}

impl Outcome {
    /// The write it makes at `now`, with its events (`payout.approved` of a
    /// payout approved in passing first); none when nothing changed.
    pub fn moved(self, now: DateTime<Utc>) -> Result<Option<Moved>, Error> {
        let Outcome::Changed {
            payout,
            from,
            event,
            approval,
            ..
        } = self
        else {
            return Ok(None);
        };
        let events = payout.transition_events(event, approval.as_deref(), now);
        Ok(Some(Moved {
            payout: *payout,
            from,
            events,
        }))
    }
}

impl Moved {
    /// This transition and `next`, decided on the payout this one leaves,
    /// as one write: from this one's status to what `next` leaves, with the
    /// events of both in turn (a provider's answer known before the commit
    /// is written with the move to PROCESSING that asked for it).
    pub fn then(mut self, next: Outcome, now: DateTime<Utc>) -> Result<Moved, Error> {
        if let Some(m) = next.moved(now)? {
            self.payout = m.payout;
            self.events.extend(m.events);
        }
        Ok(self)
    }
}

impl Command {
    /// The operation's name in error messages.
    pub fn action(&self) -> &'static str {
        match self {
            Command::AttachInvoice(_) | Command::ReplaceInvoice(_) => "attach an invoice to",
            Command::Approve { .. } => "approve",
            Command::MarkPaid { .. } | Command::Settle { .. } => "mark paid",
            Command::Reject { .. } => "reject",
            Command::Process { .. } => "process",
            Command::ConfirmPayment { .. } => "confirm the payment of",
            Command::PaymentFailed { .. } => "fail the payment of",
            Command::PaymentAccepted { .. } | Command::PaymentUnclaimed { .. } => {
                "note the provider's answer on"
            }
            Command::Cancel { .. } => "cancel",
        }
    }

    /// The states the command may start from.
    pub fn from_states(&self) -> &'static [PayoutStatus] {
        use PayoutStatus::*;
        match self {
            Command::AttachInvoice(_) => &[Pending],
            Command::ReplaceInvoice(_) => INVOICE_STATES,
            Command::Approve { .. } => &[InvoiceUploaded],
            Command::MarkPaid { .. } => &[Approved],
            Command::Settle { .. } => &[Pending, InvoiceUploaded, Approved, Processing],
            Command::Reject { .. } | Command::Cancel { .. } => {
                &[Pending, InvoiceUploaded, Approved]
            }
            Command::Process { .. } => &[InvoiceUploaded, Approved],
            Command::ConfirmPayment { .. }
            | Command::PaymentFailed { .. }
            | Command::PaymentAccepted { .. }
            | Command::PaymentUnclaimed { .. } => &[Processing],
        }
    }

    /// The state the command moves a payout to, with its event; `None` for
    /// a provider's answer that leaves it PROCESSING.
    fn moves_to(&self) -> Option<(PayoutStatus, EventType)> {
        use PayoutStatus::*;
        let to = match self {
            Command::AttachInvoice(_) | Command::ReplaceInvoice(_) => {
                (InvoiceUploaded, EventType::PayoutInvoiceUploaded)
            }
            Command::Approve { .. } => (Approved, EventType::PayoutApproved),
            Command::Process { .. } => (Processing, EventType::PayoutProcessing),
            Command::MarkPaid { .. } | Command::Settle { .. } | Command::ConfirmPayment { .. } => {
                (Paid, EventType::PayoutPaid)
            }
            Command::PaymentAccepted { .. } | Command::PaymentUnclaimed { .. } => return None,
            Command::PaymentFailed { .. } => (Approved, EventType::PayoutPaymentFailed),
            Command::Reject { .. } => (Rejected, EventType::PayoutRejected),
            Command::Cancel { .. } => (Cancelled, EventType::PayoutCancelled),
        };
        Some(to)
    }
}

impl Payout {
    /// The 409 for `command` on a payout that is `current`.
    pub fn wrong_state(current: PayoutStatus, command: &Command) -> Error {
        Error::state("payout", current.as_str(), command.action())
    }

    /// Applies `command` at `now`, as the contract's transition table says.
    pub fn apply(&self, command: Command, now: DateTime<Utc>) -> Result<Outcome, Error> {
        // PUT mark-paid again, or a second confirmation of the same payment
        // (a request and the job's retry racing; the provider pays once per
        // payout id), leaves a PAID payout as it is.
        if self.status == PayoutStatus::Paid
            && matches!(
                command,
                Command::Settle { .. } | Command::ConfirmPayment { .. }
            )
        {
            return Ok(Outcome::Unchanged);
        }
        // The same file again (a storage notification delivered twice, or
        // the one that follows a portal upload) is no new invoice.
        if let Command::AttachInvoice(upload) | Command::ReplaceInvoice(upload) = &command {
            if self.holds_invoice(upload) {
                return Ok(Outcome::Unchanged);
            }
        }
        if !command.from_states().contains(&self.status) {
            return Err(Self::wrong_state(self.status, &command));
        }
        if let Command::Approve { checked_invoice }
        | Command::Process {
            checked_invoice, ..
        } = &command
        {
            self.check_invoice(checked_invoice.as_deref())?;
        }
        let mut p = self.clone();
        p.updated_at = now;
        let event = p.record(command, now);
        let approval = self.approved_in_passing(&p);
        let follow_up = match p.status {
            PayoutStatus::Paid => FollowUp::PayConversions,
            PayoutStatus::Rejected | PayoutStatus::Cancelled => FollowUp::ReleaseConversions,
            _ => FollowUp::Nothing,
        };
        p.work = match follow_up {
            FollowUp::Nothing => None,
            FollowUp::PayConversions => Some(PayoutWork::Settle),
            FollowUp::ReleaseConversions => Some(PayoutWork::Release),
        };
        Ok(Outcome::Changed {
            payout: Box::new(p),
            from: self.status,
            follow_up,
            event,
            approval,
        })
    }

    /// This payout as approved, when `after` (its next state) approved it
    /// in passing: `approvedAt` set by a move to another state than
    /// APPROVED, which records its own event.
    fn approved_in_passing(&self, after: &Payout) -> Option<Box<Payout>> {
        let passing = self.approved_at.is_none()
            && after.approved_at.is_some()
            && after.status != PayoutStatus::Approved;
        passing.then(|| {
            let mut a = self.clone();
            a.status = PayoutStatus::Approved;
            a.approved_at = after.approved_at;
            a.updated_at = after.updated_at;
            Box::new(a)
        })
    }

    /// Records what a (permitted) command says and moves to its state.
    fn record(&mut self, command: Command, now: DateTime<Utc>) -> Option<EventType> {
        let moves = command.moves_to();
        self.record_details(command, now);
        let (to, event) = moves?;
        if to == PayoutStatus::Paid {
            self.paid_at = Some(now);
        }
        self.status = to;
        Some(event)
    }

    /// Keeps what a command carries: the invoice, the payment's details and
    /// attempts, the provider's answer, the reason the payout ends.
    fn record_details(&mut self, command: Command, now: DateTime<Utc>) {
        match command {
            Command::AttachInvoice(upload) | Command::ReplaceInvoice(upload) => {
                self.invoice = Some(Invoice {
                    file_name: upload.file_name,
                    content_type: upload.content_type,
                    size: upload.size,
                    uploaded_at: now,
                });
                self.invoice_key = Some(upload.key);
            }
            Command::Approve { .. } => self.approved_at = Some(now),
            Command::Process { rail, .. } => {
                self.approved_at.get_or_insert(now);
                self.payment_error = None;
                self.payment_attempt += 1;
                self.rail = rail;
                // A reference is an earlier attempt's (PayPal's refused batch).
                self.payment_reference = None;
            }
            Command::MarkPaid {
                payment_date,
                payment_method,
            } => {
                self.payment_date = Some(payment_date);
                self.payment_method = Some(payment_method);
            }
            Command::Settle {
                payment_reference,
                note,
            } => {
                self.payment_reference = payment_reference.or(self.payment_reference.take());
                self.note = note.or(self.note.take());
            }
            Command::ConfirmPayment { reference } => {
                self.payment_reference = reference.or(self.payment_reference.take());
                // Paid through a rail: the rail is how it was paid.
                if let Some(rail) = self.rail {
                    self.payment_method = Some(rail.as_str().to_string());
                }
            }
            Command::PaymentAccepted { reference } => self.payment_reference = Some(reference),
            Command::PaymentUnclaimed { code, message } => {
                self.last_payment_error = Some(PaymentError::new(code, message, now));
            }
            Command::PaymentFailed { code, message } => {
                self.payment_error = Some(message.clone());
                self.last_payment_error = Some(PaymentError::new(code, message, now));
            }
            Command::Reject { reason } => self.rejection_reason = Some(reason),
            Command::Cancel { reason } => self.cancellation_reason = Some(reason),
        }
    }
}
