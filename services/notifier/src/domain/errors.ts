import { DomainError } from "@affiliate/platform";

export const webhookNotFound = (id: string) => new DomainError("not_found", `Webhook ${id} not found`);
export const deliveryNotFound = (id: string) => new DomainError("not_found", `Delivery ${id} not found`);
